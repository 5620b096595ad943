"""A foreign MCP server with one tool whose output is large."""
from mcp.server.mcpserver import MCPServer as FastMCP

server = FastMCP("foreign")


@server.tool()
def big_log(lines: int = 3000) -> str:
    """A long build log."""
    return "\n".join(f"line {i}: compiling module_{i} ok" for i in range(1, lines + 1))


if __name__ == "__main__":
    server.run()
