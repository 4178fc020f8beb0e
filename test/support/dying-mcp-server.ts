// An MCP server over stdio that lists one tool and dies whenever it is called: a source that fails every call.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';

const server = new McpServer({ name: 'dying', version: '1.0.0' });
server.registerTool('crash', { description: 'Exits the server mid-call.' }, () => process.exit(1));
await server.connect(new StdioServerTransport());
