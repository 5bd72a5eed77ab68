"""The grader: grade a class's submissions with the course's own tests and reference.

    python -m grading SUBMISSION... [--json F] [--csv F] [--gradescope F] [--jobs N]
                      [--isolation namespaces|uid|auto|none] [--deadline S]

    cli          the command: options, progress bar, the reports it writes
    grader       grades submissions section by section, resumes from the store
    submissions  reads a submission folder or .zip (only its section modules)
    sandbox      runs one section's tests in a private copy, in a limited child process
    isolation    what the operating system keeps from a run: namespaces, its uid, privileges
    forkserver   forks those children from one process that has imported torch already
    guard        the pytest plugin inside each child: determinism, records, watch
    integrity    what a submission must not do, found in its source; the kinds of flag
    scoring      points per test, section and submission; statuses and reasons
    reports      the terminal table, JSON, CSV and Gradescope's results.json
    store        each submission's result on disk, sealed, for resuming
    prepare      the course's tests and pre-trained reference, learned before grading
    release      `make release`: the learner's handout
    autograder   `make autograder`: the Gradescope bundle
"""
