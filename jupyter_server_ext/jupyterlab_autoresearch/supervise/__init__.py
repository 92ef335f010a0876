"""Starting, watching and stopping engines: the engine process, its flags and secrets, git and Node.js found."""
