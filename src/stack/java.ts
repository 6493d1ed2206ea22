import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { StackError } from '../errors.ts';

const run = promisify(execFile);

export interface Jdk {
  java: string;
  major: number;
}

function majorOfHome(home: string): number | undefined {
  const release = join(home, 'release');
  if (!existsSync(release) || !existsSync(join(home, 'bin', 'java'))) return undefined;
  const match = /JAVA_VERSION="(\d+)/.exec(readFileSync(release, 'utf8'));
  return match ? Number(match[1]) : undefined;
}

/** JDKs from JAVA_HOME and the system's JVM directory, newest first. */
export function listJdks(env: NodeJS.ProcessEnv = process.env, jvmDir = '/usr/lib/jvm'): Jdk[] {
  const homes = new Set<string>();
  if (env.JAVA_HOME) homes.add(env.JAVA_HOME);
  if (existsSync(jvmDir)) for (const name of readdirSync(jvmDir)) homes.add(join(jvmDir, name));
  const jdks: Jdk[] = [];
  const seen = new Set<string>();
  for (const home of homes) {
    const major = majorOfHome(home);
    const java = join(home, 'bin', 'java');
    if (major !== undefined && !seen.has(java)) {
      seen.add(java);
      jdks.push({ java, major });
    }
  }
  return jdks.sort((a, b) => b.major - a.major);
}

async function javaOnPath(): Promise<Jdk | undefined> {
  try {
    const { stderr } = await run('java', ['-version']);
    const match = /version "(\d+)/.exec(stderr);
    return match ? { java: 'java', major: Number(match[1]) } : undefined;
  } catch {
    return undefined;
  }
}

/** A Java runtime of at least `minimum`, preferring JAVA_HOME, then the JVM directory, then PATH. */
export async function findJava(
  minimum: number,
  env: NodeJS.ProcessEnv = process.env,
): Promise<Jdk | undefined> {
  const fromHome = env.JAVA_HOME ? listJdks({ JAVA_HOME: env.JAVA_HOME }, '/nonexistent')[0] : undefined;
  if (fromHome && fromHome.major >= minimum) return fromHome;
  const listed = listJdks(env).find((j) => j.major >= minimum);
  if (listed) return listed;
  const path = await javaOnPath();
  return path && path.major >= minimum ? path : undefined;
}

export async function requireJava(minimum: number, what: string): Promise<Jdk> {
  const jdk = await findJava(minimum);
  if (!jdk) {
    throw new StackError(
      `${what} needs Java ${minimum} or later; install a JDK (e.g. apt-get install openjdk-17-jre-headless) or set JAVA_HOME`,
    );
  }
  return jdk;
}
