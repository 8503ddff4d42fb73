//! puzzleforge: renews chess puzzle benchmarks for evaluating LLMs.
