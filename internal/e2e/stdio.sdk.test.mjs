// The official TypeScript SDK client, spawning `flowyprompt serve` over
// stdio, against the built-in example library: the most direct check that a
// real client sees what PROTOCOL.md, TEMPLATES.md and TOOLS.md promise. The
// checks themselves live in sdk-helpers.mjs, shared with the HTTP
// transports in http.sdk.test.mjs.

import { sdkSuite, stdioClient } from "./sdk-helpers.mjs";

sdkSuite("TypeScript SDK client over stdio (embedded examples)", async () => {
  const session = await stdioClient();
  return {
    client: session.client,
    async stop() {
      await session.close();
      if (process.env.FLOWYPROMPT_E2E_VERBOSE) process.stderr.write(`server stderr tail:\n${session.stderr()}\n`);
    },
  };
});
