import { readFileSync } from 'node:fs';
import { posix } from 'node:path';

/**
 * `.dockerignore` semantics as Docker's build context applies them (moby/patternmatcher): patterns
 * are relative to the context root, `*` and `?` stay within one path segment, `**` spans segments,
 * a pattern that matches a parent directory excludes everything below it, `!` re-includes, and the
 * last matching pattern wins.
 */
export interface IgnorePattern {
  source: string;
  exclusion: boolean;
  regex: RegExp;
}

export function parseDockerignore(content: string): IgnorePattern[] {
  const patterns: IgnorePattern[] = [];
  for (const raw of content.replace(/^\uFEFF/, '').split(/\r?\n/)) {
    if (raw.startsWith('#')) continue;
    let line = raw.trim();
    if (!line) continue;
    const exclusion = line.startsWith('!');
    if (exclusion) line = line.slice(1).trim();
    if (!line) continue;
    line = posix.normalize(line);
    if (line.length > 1 && line.startsWith('/')) line = line.slice(1);
    if (line.length > 1 && line.endsWith('/')) line = line.slice(0, -1);
    patterns.push({ source: raw, exclusion, regex: compile(line) });
  }
  return patterns;
}

function compile(pattern: string): RegExp {
  let out = '^';
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i];
    if (ch === '*') {
      if (pattern[i + 1] === '*') {
        i++;
        if (pattern[i + 1] === '/') {
          i++;
          out += '(?:.*/)?'; // `**/` matches zero or more whole directories
        } else {
          out += '.*';
        }
      } else {
        out += '[^/]*';
      }
    } else if (ch === '?') {
      out += '[^/]';
    } else if (ch === '[') {
      const end = pattern.indexOf(']', i + 1);
      if (end === -1) {
        out += '\\[';
      } else {
        out += '[' + pattern.slice(i + 1, end).replace(/^!/, '^') + ']';
        i = end;
      }
    } else if (ch === '\\' && i + 1 < pattern.length) {
      i++;
      out += escapeRegex(pattern[i]);
    } else {
      out += escapeRegex(ch);
    }
  }
  return new RegExp(out + '$');
}

function escapeRegex(ch: string): string {
  return /[.*+?^${}()|[\]\\/]/.test(ch) ? '\\' + ch : ch;
}

/** Whether a context-relative path (forward slashes) is left out of the build context. */
export function isIgnored(patterns: IgnorePattern[], path: string): boolean {
  const file = posix.normalize(path).replace(/^\.\//, '').replace(/\/$/, '');
  if (file === '.' || file === '') return false;
  const parents = file.split('/').slice(0, -1);
  let matched = false;
  for (const pattern of patterns) {
    // An inclusion pattern cannot change an already-excluded path, nor an exclusion an included one.
    if (pattern.exclusion !== matched) continue;
    let match = pattern.regex.test(file);
    for (let i = 1; !match && i <= parents.length; i++) {
      match = pattern.regex.test(parents.slice(0, i).join('/'));
    }
    if (match) matched = !pattern.exclusion;
  }
  return matched;
}

export function loadDockerignore(file: string): IgnorePattern[] {
  try {
    return parseDockerignore(readFileSync(file, 'utf8'));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}
