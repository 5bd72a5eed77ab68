"""Tooling of the ELMo course: the section registry and what reads it."""
