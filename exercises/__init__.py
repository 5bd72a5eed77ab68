"""Your implementation of the ELMo course: one module per section, with a stub that raises
NotImplementedError wherever there is code for you to write.

`make test` runs every section's tests against this package, `make test SECTION=3` one
section's, and `make grade` shows your progress.
"""
