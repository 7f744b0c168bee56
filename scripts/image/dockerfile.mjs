// The Dockerfile as scripts/imageBuild.mjs reads it: stages of steps, each instruction one it knows
// how to perform (or to note) without Docker. Anything else is refused with its line, never skipped,
// so what the build here proves is what `docker build` does.

/** Instructions performed (FROM, WORKDIR, COPY, RUN, ENV) or noted in the image's settings (the rest). */
export const INSTRUCTIONS = ['FROM', 'WORKDIR', 'COPY', 'RUN', 'ENV', 'USER', 'EXPOSE', 'HEALTHCHECK', 'CMD'];

export class DockerfileError extends Error {}

/** Lines joined at a trailing backslash, comments and blank lines dropped, each with its first line number. */
function logicalLines(text) {
  const lines = [];
  let current;
  text.split(/\r?\n/).forEach((raw, index) => {
    const trimmed = raw.trim();
    // A comment line inside a continuation is dropped as Docker drops it.
    if (trimmed.startsWith('#') || (trimmed === '' && current === undefined)) return;
    const continued = /\\\s*$/.test(raw);
    const part = continued ? raw.replace(/\\\s*$/, '') : raw;
    if (current === undefined) current = { line: index + 1, text: part };
    else current.text += ` ${part.trim()}`;
    if (!continued) {
      lines.push({ line: current.line, text: current.text.trim() });
      current = undefined;
    }
  });
  if (current) lines.push({ line: current.line, text: current.text.trim() });
  return lines.filter((l) => l.text !== '');
}

/** Words split on spaces, double quotes grouping (and removed), as ENV and flags are written here. */
function words(text) {
  const out = [];
  for (const match of text.matchAll(/(?:[^\s"]+|"[^"]*")+/g)) out.push(match[0].replace(/"/g, ''));
  return out;
}

/** `--name=value` flags at the front of `args`, only those named in `allowed`. */
function flags(args, allowed, at) {
  const found = {};
  let rest = args;
  for (;;) {
    const m = /^--([a-z-]+)=(\S+)\s*/.exec(rest);
    if (!m) break;
    if (!allowed.includes(m[1])) throw new DockerfileError(`${at}: the flag --${m[1]} is not one this build knows`);
    found[m[1]] = m[2];
    rest = rest.slice(m[0].length);
  }
  if (/^--\S/.test(rest))
    throw new DockerfileError(`${at}: the flag ${rest.split(/\s/)[0]} is not one this build knows`);
  return { found, rest };
}

function parseStep(keyword, args, line) {
  const at = `line ${line}: ${keyword}`;
  if (args === '') throw new DockerfileError(`${at} needs arguments`);
  switch (keyword) {
    case 'COPY': {
      const { found, rest } = flags(args, ['from', 'chown'], at);
      if (rest.startsWith('[')) throw new DockerfileError(`${at}: the JSON form is not one this build knows`);
      const paths = words(rest);
      if (paths.length < 2) throw new DockerfileError(`${at} needs a source and a destination`);
      if (paths.some((p) => /[*?[]/.test(p))) throw new DockerfileError(`${at}: wildcards are not performed here`);
      return { keyword, line, from: found.from, chown: found.chown, sources: paths.slice(0, -1), dest: paths.at(-1) };
    }
    case 'RUN': {
      if (args.startsWith('[') || args.startsWith('--'))
        throw new DockerfileError(`${at}: only the plain shell form is performed here`);
      // A path from the root would act on this machine's root, not the stage's: paths are WORKDIR's.
      if (words(args).some((w) => w.startsWith('/')))
        throw new DockerfileError(
          `${at}: an absolute path (${args}) is not performed here; use WORKDIR and a relative path`,
        );
      return { keyword, line, command: args };
    }
    case 'ENV': {
      const pairs = words(args).map((w) => /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(w));
      if (pairs.some((p) => !p)) throw new DockerfileError(`${at}: write KEY=value pairs`);
      return { keyword, line, env: Object.fromEntries(pairs.map((p) => [p[1], p[2]])) };
    }
    case 'WORKDIR':
      return { keyword, line, path: args };
    case 'CMD':
      return { keyword, line, value: args.startsWith('[') ? JSON.parse(args) : args };
    default:
      return { keyword, line, value: args };
  }
}

/**
 * The stages of a Dockerfile, in order: `{ name, base, line, steps }`, a stage's name lower-cased
 * (Docker's are case-insensitive) or its index. Throws DockerfileError naming the first line it
 * will not perform.
 */
export function parseDockerfile(text) {
  const stages = [];
  for (const { line, text: instruction } of logicalLines(text)) {
    const [word = '', ...restWords] = instruction.split(/\s+/);
    const keyword = word.toUpperCase();
    const args = instruction.slice(word.length).trim();
    if (!INSTRUCTIONS.includes(keyword))
      throw new DockerfileError(
        `line ${line}: ${keyword} is not an instruction this build knows (${INSTRUCTIONS.join(', ')}); refused rather than skipped`,
      );
    if (keyword === 'FROM') {
      if (args.startsWith('--')) throw new DockerfileError(`line ${line}: FROM flags are not performed here`);
      const m = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(restWords.join(' '));
      if (!m) throw new DockerfileError(`line ${line}: write FROM <image or stage> [AS <name>]`);
      stages.push({ name: (m[2] ?? String(stages.length)).toLowerCase(), base: m[1], line, steps: [] });
      continue;
    }
    const stage = stages.at(-1);
    if (!stage) throw new DockerfileError(`line ${line}: ${keyword} before the first FROM`);
    stage.steps.push({ ...parseStep(keyword, args, line), args });
  }
  if (stages.length === 0) throw new DockerfileError('no FROM: not a Dockerfile');
  return stages;
}
