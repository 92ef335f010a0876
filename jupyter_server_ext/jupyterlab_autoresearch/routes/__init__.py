"""The server's REST and WebSocket routes under `<base_url>/autoresearch/`: what each accepts and answers."""
