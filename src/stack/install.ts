import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  createReadStream,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { StackError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { withLock } from './lock.ts';
import {
  APICURIO_JAVA17_VERSION,
  APICURIO_VERSION,
  cacheDir,
  KAFKA_VERSION,
  LOG4J_VERSION,
} from './paths.ts';

const run = promisify(execFile);

async function mvn(args: string[], cwd: string): Promise<void> {
  try {
    // -C: fail on a checksum mismatch instead of warning, so a corrupt download is never trusted.
    await run('mvn', ['-q', '-B', '-C', ...args], { cwd, maxBuffer: 16 * 1024 * 1024 });
  } catch (err) {
    const e = err as { code?: string; stdout?: string; stderr?: string };
    if (e.code === 'ENOENT')
      throw new StackError(
        'Maven (mvn) is not installed; it fetches Kafka and the registry from Maven Central',
      );
    throw new StackError(
      `mvn ${args.join(' ')} failed: ${(e.stdout ?? '').slice(-2000)}${(e.stderr ?? '').slice(-2000)}`,
      {
        cause: err,
      },
    );
  }
}

function kafkaPom(): string {
  const dep = (g: string, a: string, v: string) =>
    `<dependency><groupId>${g}</groupId><artifactId>${a}</artifactId><version>${v}</version></dependency>`;
  return `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>fraudlink.local</groupId><artifactId>kafka-runtime</artifactId><version>1</version><packaging>pom</packaging>
  <dependencies>
    ${dep('org.apache.kafka', 'kafka_2.13', KAFKA_VERSION)}
    ${dep('org.apache.kafka', 'kafka-tools', KAFKA_VERSION)}
    ${dep('org.apache.logging.log4j', 'log4j-slf4j-impl', LOG4J_VERSION)}
    ${dep('org.apache.logging.log4j', 'log4j-api', LOG4J_VERSION)}
    ${dep('org.apache.logging.log4j', 'log4j-core', LOG4J_VERSION)}
  </dependencies>
</project>
`;
}

/** Kafka's jars (with a log4j2 backend) in `<cache>/kafka-<version>/libs`, fetched once. */
export async function ensureKafka(logger: Logger): Promise<string> {
  const home = join(cacheDir(), `kafka-${KAFKA_VERSION}`);
  const libs = join(home, 'libs');
  const marker = join(home, '.complete');
  const ready = () => existsSync(marker) && existsSync(join(libs, `kafka_2.13-${KAFKA_VERSION}.jar`));
  if (ready()) return libs;
  return withLock(join(cacheDir(), 'install.lock'), async () => {
    if (ready()) return libs;
    logger.info({ version: KAFKA_VERSION }, 'fetching Apache Kafka from Maven Central');
    rmSync(home, { recursive: true, force: true });
    mkdirSync(home, { recursive: true });
    writeFileSync(join(home, 'pom.xml'), kafkaPom());
    const tmp = join(home, 'libs.partial');
    await mvn(
      ['-f', 'pom.xml', 'dependency:copy-dependencies', '-DincludeScope=runtime', `-DoutputDirectory=${tmp}`],
      home,
    );
    renameSync(tmp, libs);
    writeFileSync(marker, JSON.stringify({ version: KAFKA_VERSION, jars: readdirSync(libs).length }));
    return libs;
  });
}

async function sha1Of(file: string): Promise<string> {
  const hash = createHash('sha1');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

export interface ApicurioInstall {
  version: string;
  /** The jar to run with `java -jar`. */
  jar: string;
}

/** Apicurio Registry extracted in `<cache>/apicurio-<version>`, fetched once and checked against its SHA-1. */
export async function ensureApicurio(javaMajor: number, logger: Logger): Promise<ApicurioInstall> {
  const version = javaMajor >= 21 ? APICURIO_VERSION : APICURIO_JAVA17_VERSION;
  const home = join(cacheDir(), `apicurio-${version}`);
  const marker = join(home, '.complete');
  const read = (): ApicurioInstall | undefined => {
    if (!existsSync(marker)) return undefined;
    const jar = join(home, JSON.parse(readFileSync(marker, 'utf8')).jar as string);
    return existsSync(jar) ? { version, jar } : undefined;
  };
  const done = read();
  if (done) return done;
  return withLock(join(cacheDir(), 'install.lock'), async () => {
    const again = read();
    if (again) return again;
    logger.info({ version }, 'fetching Apicurio Registry from Maven Central');
    const downloads = join(cacheDir(), 'downloads');
    mkdirSync(downloads, { recursive: true });
    const artifact = `io.apicurio:apicurio-registry-app:${version}:tar.gz:all`;
    await mvn(['dependency:copy', `-Dartifact=${artifact}`, `-DoutputDirectory=${downloads}`], downloads);
    const archive = join(downloads, `apicurio-registry-app-${version}-all.tar.gz`);
    const published = join(
      homedir(),
      '.m2/repository/io/apicurio/apicurio-registry-app',
      version,
      `apicurio-registry-app-${version}-all.tar.gz.sha1`,
    );
    if (existsSync(published)) {
      const expected = readFileSync(published, 'utf8').trim().split(/\s+/)[0];
      const actual = await sha1Of(archive);
      if (expected !== actual) {
        rmSync(archive, { force: true });
        throw new StackError(
          `Apicurio archive checksum mismatch (expected ${expected}, got ${actual}); removed, try again`,
        );
      }
    }
    const tmp = `${home}.partial`;
    rmSync(tmp, { recursive: true, force: true });
    rmSync(home, { recursive: true, force: true });
    mkdirSync(tmp, { recursive: true });
    await run('tar', ['-xzf', archive, '-C', tmp]);
    const jar = ['quarkus-run.jar', `apicurio-registry-app-${version}-runner.jar`].find((j) =>
      existsSync(join(tmp, j)),
    );
    if (!jar) throw new StackError(`Apicurio archive ${archive} has no runnable jar`);
    renameSync(tmp, home);
    writeFileSync(marker, JSON.stringify({ version, jar }));
    return { version, jar: join(home, jar) };
  });
}
