"""Small utilities with no knowledge of Guard's domain: text, shell quoting, safe regexes,
plain HTTP, the Docker client, validation messages, command text, pacing."""
