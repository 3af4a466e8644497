"""An LLM judge over any OpenAI-compatible chat-completions endpoint: GEMBA-MQM-style error spans per
question pair, as an audit signal (`audit --judge llm:MODEL --judge-url URL`, docs/audit.md)."""
