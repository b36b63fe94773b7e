/** Colour on a terminal only: never with NO_COLOR (any value), TERM=dumb or off a TTY; FORCE_COLOR forces it. */
export function colorEnabled(stream: NodeJS.WriteStream, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '0') return true;
  return !!stream.isTTY && env.TERM !== 'dumb';
}

export interface Style {
  bold(text: string): string;
  dim(text: string): string;
  red(text: string): string;
  green(text: string): string;
  yellow(text: string): string;
  cyan(text: string): string;
}

const ansi = (open: number, close: number) => (text: string) => `\u001b[${open}m${text}\u001b[${close}m`;
const plain = (text: string) => text;

export function style(enabled: boolean): Style {
  return enabled
    ? {
        bold: ansi(1, 22),
        dim: ansi(2, 22),
        red: ansi(31, 39),
        green: ansi(32, 39),
        yellow: ansi(33, 39),
        cyan: ansi(36, 39),
      }
    : { bold: plain, dim: plain, red: plain, green: plain, yellow: plain, cyan: plain };
}

const ANSI = /\u001b\[[0-9;]*m/g;
const visible = (text: string) => text.replace(ANSI, '').length;

/** A plain text table: a header row, then rows, columns padded to their widest cell (colour codes not counted). */
export function table(headers: string[], rows: string[][], s: Style): string {
  const widths = headers.map((h, i) => Math.max(visible(h), ...rows.map((r) => visible(r[i] ?? ''))));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell + ' '.repeat(widths[i]! - visible(cell))))
      .join('  ')
      .trimEnd();
  return [s.bold(line(headers)), ...rows.map(line)].join('\n');
}

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/** A spinner on stderr while a promise runs; nothing at all when stderr is not a terminal. */
export async function withSpinner<T>(
  label: string,
  work: Promise<T>,
  stream: NodeJS.WriteStream = process.stderr,
): Promise<T> {
  if (!stream.isTTY) return work;
  let frame = 0;
  const draw = () => stream.write(`\r${FRAMES[frame++ % FRAMES.length]} ${label}`);
  draw();
  const timer = setInterval(draw, 80);
  try {
    return await work;
  } finally {
    clearInterval(timer);
    stream.write('\r\u001b[2K');
  }
}
