"""Signatures: typed declarations of what goes into and out of each LM call. No logic lives here."""
