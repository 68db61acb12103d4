"""Prompt templates of the LLM roles (plain text, str.format fields)."""
