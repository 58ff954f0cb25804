"""Knowledge-update evaluation: authored conversations whose facts change, and a scorer."""
