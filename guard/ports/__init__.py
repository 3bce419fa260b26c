"""The protocols one part of Guard sees of another (a running Guard as the web endpoint
and the chat gateway see it), so neither imports the runtime that implements them."""
