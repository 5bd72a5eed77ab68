"""The grader: grade a class's submissions with the course's own tests and reference.

    python -m grading SUBMISSION... [--jobs N] [--json F] [--csv F] [--gradescope F] ...
    python -m grading.report GRADES.json [--out DIR]     # the class report
    python -m grading.similarity SUBMISSIONS_DIR [--grades GRADES.json]   # what they share

`cli` is the command, `grader` grades section by section in a `sandbox`, whose `zygote`
forks each run; `judging` draws the judged tests' cases and judges what the run computed;
`records`, `scan` and `scoring` make a run's result, `outputs` its table and files; `report`
and `similarity` read a class. See docs/instructors.md.
"""
