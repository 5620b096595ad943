"""A stand-in for another MCP server (a GitHub or database server): one tool whose
output is as large as asked. Used by tests/harness/test_routing_real_clients.py."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("bigdata")


@server.tool(structured_output=False)  # plain text content, as most servers send
def dump(rows: int) -> str:
    """Return ``rows`` rows of a large table."""
    return "\n".join(f'{{"row": {i}, "title": "Issue {i}: the parser drops field {i % 7}"}}'
                     for i in range(1, rows + 1))


if __name__ == "__main__":
    server.run()
