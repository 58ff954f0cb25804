"""Memory for the agent frameworks people use, built on the SDK (`memstream.client`) alone.

- `memstream.integrations.langchain_history`: `MemstreamChatMessageHistory`, a LangChain
  chat-message history that publishes every human and AI message to memstream;
- `memstream.integrations.langchain_retriever`: `MemstreamRetriever`, recall as LangChain
  documents (level, interval, source ids, score and validity in their metadata);
- `memstream.integrations.langgraph_agent`: a LangGraph agent that remembers across threads;
- `memstream.integrations.openai_agents`: `MemstreamSession` and `recall_tool` for the OpenAI
  Agents SDK.

Install `memstream[langchain]` or `memstream[openai-agents]`. This package imports neither
framework itself, and nothing else in memstream imports it (`.importlinter`).
"""
