import { convert } from 'html-to-text';
const size = 2 * 1024 * 1024;
const pat = process.argv[2];
const html = pat.repeat(Math.floor(size / pat.length));
const limits = JSON.parse(process.argv[3] ?? '{}');
const t = performance.now();
try {
  const out = convert(html, { wordwrap: false, limits });
  console.log(pat, JSON.stringify(limits), (performance.now() - t).toFixed(0), 'ms', out.length);
} catch (e) { console.log(pat, JSON.stringify(limits), (performance.now() - t).toFixed(0), 'ms', 'ERR', e.message); }
