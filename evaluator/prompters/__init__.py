"""Prompters: things that turn a task into a prompt (baselines here; remote endpoints later)."""
