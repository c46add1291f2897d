/** The prompt of the README's quick start; the example cassette was recorded with it. */
export const QUICKSTART_PROMPT =
  'Remember that the release freeze starts on 12 December. When can we still deploy before it?';
export const QUICKSTART_AGENT = 'examples/notes-keeper';
export const QUICKSTART_CASSETTE = 'examples/notes-keeper/cassettes/quickstart.json';
