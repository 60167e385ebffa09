"""Parsers: probe output → plain facts with the line each fact came from. No verdicts here."""
