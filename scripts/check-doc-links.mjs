#!/usr/bin/env node
// Checks the relative links of the documentation: every `](path)` and `](path#anchor)` in
// README.md and docs/**/*.md (outside code blocks and code spans) must name a file that
// exists and, for an anchor into a Markdown file, a heading of that file (GitHub's slug
// rules: lower case, punctuation dropped, spaces to hyphens, "-1", "-2"… for repeats) or an
// explicit `<a id="…">` / `<a name="…">`. Links to other sites (`http:`, `mailto:` …) are
// not checked.
//
//   node scripts/check-doc-links.mjs [root]     (root defaults to the repository)
//
// Prints one line per broken link and exits 1 when there is any, 0 otherwise.

import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const root = resolve(process.argv[2] ?? join(import.meta.dirname, '..'));

/** The Markdown files checked: README.md and everything under docs/. */
function markdownFiles() {
  const files = [];
  if (existsSync(join(root, 'README.md'))) files.push(join(root, 'README.md'));
  const walk = (dir) => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.md')) files.push(path);
    }
  };
  if (existsSync(join(root, 'docs'))) walk(join(root, 'docs'));
  return files;
}

/** The lines of a Markdown text outside fenced code blocks, with their numbers. */
function proseLines(text) {
  const out = [];
  let fence = null;
  text.split('\n').forEach((line, i) => {
    const m = /^\s*(`{3,}|~{3,})/.exec(line);
    if (m) {
      if (fence === null) fence = m[1][0];
      else if (m[1][0] === fence) fence = null;
      return;
    }
    if (fence === null) out.push({ line, number: i + 1 });
  });
  return out;
}

/** GitHub's slug of a heading's text (as github-slugger computes it from the rendered text). */
export function slug(heading) {
  const rendered = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // links and images: their text
    .replace(/<[^>]+>/g, '') // inline HTML tags
    .replace(/`([^`]*)`/g, '$1') // code spans: their text
    .replace(/(\*\*|__)(.*?)\1/g, '$2') // bold
    .replace(/(^|[^\p{L}\p{N}])[*_](\S.*?)[*_](?=$|[^\p{L}\p{N}])/gu, '$1$2'); // emphasis
  return rendered
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

const anchorCache = new Map();
/** Every anchor a Markdown file offers: its headings' slugs and explicit HTML anchors. */
function anchorsOf(file) {
  let anchors = anchorCache.get(file);
  if (anchors) return anchors;
  anchors = new Set();
  const seen = new Map();
  for (const { line } of proseLines(readFileSync(file, 'utf8'))) {
    const h = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (h) {
      const base = slug(h[1]);
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      anchors.add(n === 0 ? base : `${base}-${n}`);
    }
    for (const a of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(a[1]);
  }
  anchorCache.set(file, anchors);
  return anchors;
}

const broken = [];
let checked = 0;
for (const file of markdownFiles()) {
  const shown = relative(root, file);
  for (const { line, number } of proseLines(readFileSync(file, 'utf8'))) {
    const prose = line.replace(/(`+)(?:(?!\1).)+\1/g, ''); // drop code spans
    for (const m of prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      const target = m[1];
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // another site, mailto:, …
      checked++;
      const hash = target.indexOf('#');
      const path = decodeURIComponent(hash === -1 ? target : target.slice(0, hash));
      const anchor = hash === -1 ? null : decodeURIComponent(target.slice(hash + 1));
      const dest = path === '' ? file : resolve(dirname(file), path);
      if (!existsSync(dest)) {
        broken.push(`${shown}:${number}: ${target}: no such file`);
        continue;
      }
      if (anchor === null || anchor === '') continue;
      if (!dest.endsWith('.md') || statSync(dest).isDirectory()) {
        broken.push(`${shown}:${number}: ${target}: an anchor into a file that is not Markdown`);
        continue;
      }
      if (!anchorsOf(dest).has(anchor)) {
        broken.push(`${shown}:${number}: ${target}: no heading #${anchor} in ${relative(root, dest)}`);
      }
    }
  }
}

for (const b of broken) console.log(b);
console.log(`doc links: ${checked} checked, ${broken.length} broken`);
process.exit(broken.length === 0 ? 0 : 1);
