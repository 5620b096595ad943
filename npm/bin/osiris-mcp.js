#!/usr/bin/env node
// `npx -y osiris-mcp [ARGS]`: the OSIRIS MCP server on stdio (ARGS go to `python -m osiris`).
import { main } from '../lib/launcher.js';

main();
