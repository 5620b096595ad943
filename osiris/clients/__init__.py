"""Client integration (SPEC section 13): hooks that route a client's tool calls through
OSIRIS, and installers that wire OSIRIS into the client's own configuration."""
