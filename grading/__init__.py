"""The grader: grade a class's submissions with the course's own tests and reference.

    python -m grading SUBMISSION... [--json F] [--csv F] [--gradescope F] [--jobs N]
                      [--isolation bwrap|uid|auto|none] [--deadline S]
                      [--previous OLD.json [--accept-changes]]
    python -m grading.report GRADES.json [--out DIR]     # the class report

    cli          the command: its options, the reports it writes
    grader       grades submissions section by section, resumes from the store
    submissions  reads a submission folder or .zip (only its section modules)
    sandbox      where a run runs (bubblewrap, or a uid of its own) and its limits
    zygote       in the sandbox: forks each run from a process that imported torch once;
                 the run's system-call filter and pytest plugin
    records      what a run wrote to the grader, typed and checked
    scan         what a submission must not do, read from its source; the kinds of flag
    scoring      results and points per test, section and submission
    reports      the terminal table, JSON, CSV and Gradescope's results.json
    regrade      what a regrade changes against a previous grades file (--previous)
    report       the class report of a grades file: scores, tests, concepts, known mistakes
    store        each submission's result on disk, for resuming
    prepare      the course's tests and pre-trained reference, learned before grading
    hidden       the term secret's seeds for hidden examples (--secret-file)
    examples     the hidden examples' text, from the reference's run on the same seed
"""
