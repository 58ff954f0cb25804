"""The embedded stack for development and tests: `stack.EmbeddedStack` (async context
manager), `runner.run_until_signal` (what `memstream up` runs), `background.BackgroundStack`
(the stack in a thread, for synchronous callers)."""
