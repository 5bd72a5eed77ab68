"""The grader: grade a class's submissions with the course's own tests and reference.

    python -m grading SUBMISSION... [--jobs N] [--json F] [--csv F] [--gradescope F] ...
    python -m grading.report GRADES.json [--out DIR]     # the class report

`cli` is the command, `grader` grades section by section in a `sandbox`, whose `zygote`
forks each run; `records`, `scan` and `scoring` make a run's result, `reports` its outputs;
`hidden` and `examples` give the hidden examples of `--secret-file`. See docs/instructors.md.
"""
