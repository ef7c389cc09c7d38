"""Behaviour: retrieval accuracy by position."""
