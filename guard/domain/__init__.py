"""Guard's vocabulary: the records that flow through it, its errors, fingerprints and
durations. Imports nothing of Guard."""
