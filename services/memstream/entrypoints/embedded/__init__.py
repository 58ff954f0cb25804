"""The embedded stack for development and tests: `stack.EmbeddedStack` (async context
manager), `commands.up` (`memstream up`: the stack plus every part, through the runner),
`background.BackgroundStack` (the stack in a thread, for synchronous callers)."""
