//! Empty: the benchmark is vs_tool_parser.rs.
