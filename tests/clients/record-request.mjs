// Preloaded (node --import) by readme.test.mjs: appends the JSON body of
// every request the program sends through fetch to $CODELLM_RECORD.
import fs from 'node:fs';

const realFetch = globalThis.fetch;
globalThis.fetch = async (input, init = {}) => {
  if (typeof init.body === 'string') fs.appendFileSync(process.env.CODELLM_RECORD, init.body + '\n');
  return realFetch(input, init);
};
