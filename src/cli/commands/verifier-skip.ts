import { type Command, InvalidArgumentError } from 'commander';
import { loadVerifierSkipConfig } from '../../config/index.ts';
import { createKafkaClient } from '../../kafka/index.ts';
import type { CliContext } from '../context.ts';
import { commandLogger, unlessSignalled } from '../options.ts';

const partitionNumber = (value: string): number => {
  if (!/^\d{1,9}$/.test(value)) throw new InvalidArgumentError(`"${value}" is not a partition number`);
  return Number(value);
};

const offsetNumber = (value: string): string => {
  if (!/^\d{1,19}$/.test(value) || BigInt(value) > 2n ** 63n - 1n) {
    throw new InvalidArgumentError(`"${value}" is not a record offset (0 to 2^63-1)`);
  }
  return BigInt(value).toString();
};

const SKIP_HELP = `
Moves the record at --offset of partition --partition of VERIFY_REQUESTS_TOPIC to VERIFY_DLQ_TOPIC
and commits the offset of VERIFY_GROUP_ID past it, in one Kafka transaction. The DLQ copy keeps
the record's key, value and headers (cut down to the DLQ topic's max.message.bytes if it must be,
with header dlq-truncated); it adds error-code OPERATOR_SKIPPED, error-message (--reason),
source-topic, source-partition, source-offset and observed-at. An offset inside a record batch that
cannot be read moves past the whole batch: the copy holds its compressed records, with
source-offset-first, source-offset-last, source-codec and source-unreadable (why). A record the
read fails on otherwise is copied as an empty value with source-unreadable.

Stop the verifiers first: it refuses (exit 2) while the group has active members. It also refuses
an offset that is not the group's next record on that partition. When the group's committed
offset is already past it, it says so and does nothing (exit 0). Prints the outcome as JSON.

Reads KAFKA_*, VERIFY_REQUESTS_TOPIC, VERIFY_DLQ_TOPIC, VERIFY_GROUP_ID and LOG_LEVEL: neither the
upstream (API_*) nor the schema registry is needed. See "Moving a stuck record past" in
docs/operations.md.`;

/** `fraudlink verifier skip`: the escape hatch for a record that stops its partition. */
export function registerVerifierSkipCommand(verifier: Command, ctx: CliContext): void {
  verifier
    .command('skip')
    .description("move one record of the requests topic to the DLQ and commit the group's offset past it")
    .requiredOption('--partition <n>', 'partition of VERIFY_REQUESTS_TOPIC', partitionNumber)
    .requiredOption('--offset <offset>', 'offset of the record to move past', offsetNumber)
    .option('--reason <text>', "the DLQ copy's error-message", 'moved past by an operator')
    .addHelpText('after', SKIP_HELP)
    .action(async (opts: { partition: number; offset: string; reason: string }) => {
      const config = loadVerifierSkipConfig(ctx.env);
      const logger = commandLogger(config);
      const kafka = createKafkaClient({ config: config.kafka, logger });
      const { skipRecord } = await import('../../verifier/skip.ts');
      const request = { partition: opts.partition, offset: opts.offset, reason: opts.reason };
      const done = await unlessSignalled(ctx, logger, 'nothing was skipped', (signal) =>
        skipRecord({ kafka, config, logger, signal }, request),
      );
      if (done === undefined) return;
      const outcome = done.value;
      const at = { topic: config.requestsTopic, partition: opts.partition, offset: opts.offset };
      if (outcome.kind === 'already-past') {
        logger.info(
          { ...at, committed: outcome.committed },
          'the group is already past this record: nothing done',
        );
      }
      ctx.stdout.write(
        `${JSON.stringify({ ...at, groupId: config.groupId, dlqTopic: config.dlqTopic, ...outcome })}\n`,
      );
    });
}
