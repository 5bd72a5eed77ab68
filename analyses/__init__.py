"""The analyses of the ELMo course, shipped in the handout beside the learner runtime
(`course`): what the notebooks call (`notebook`, `playground`, `plots`, `predictions`), the
probes and readings of a biLM's layers (`analysis`, `your_elmo`), the measurements of `make
replicate` (`experiments`, each biLM against the untrained biLM it started from, and
`targets`, what the paper found read as effects of pre-training) and ELMo on real English
(`real_english` and its readings). They import the runtime, never the reverse: a grading run
holds `course` alone. Nothing here imports the course's tools, grader or reference."""
