// Test tool (not part of the product): an independent transactional
// producer in another language. Usage:
//   node txn-produce.js BROKERS TOPIC COMMITTED_FILE ABORTED_FILE PLAIN_FILE
// It sends COMMITTED_FILE's bytes as one message in a transaction that
// commits, ABORTED_FILE's in a transaction that aborts, then PLAIN_FILE's
// without a transaction, all to partition 0 of TOPIC, as kafkajs users
// (and NiFi, Kafka Connect exactly-once, Flink) write.
'use strict';
const fs = require('fs');
const { Kafka, logLevel } = require('kafkajs');

async function main() {
  const [brokers, topic, committedFile, abortedFile, plainFile] = process.argv.slice(2);
  if (!plainFile) {
    throw new Error('usage: txn-produce.js BROKERS TOPIC COMMITTED_FILE ABORTED_FILE PLAIN_FILE');
  }
  const kafka = new Kafka({ clientId: 'dpsurv-txn-test', brokers: brokers.split(','), logLevel: logLevel.WARN });
  const txProducer = kafka.producer({ transactionalId: 'dpsurv-txn-test', idempotent: true, maxInFlightRequests: 1 });
  await txProducer.connect();
  for (const [file, commit] of [[committedFile, true], [abortedFile, false]]) {
    const txn = await txProducer.transaction();
    await txn.send({ topic, messages: [{ partition: 0, value: fs.readFileSync(file) }] });
    if (commit) {
      await txn.commit();
    } else {
      await txn.abort();
    }
    console.log(`${commit ? 'committed' : 'aborted'} a transaction of ${file}`);
  }
  await txProducer.disconnect();
  const plain = kafka.producer();
  await plain.connect();
  await plain.send({ topic, messages: [{ partition: 0, value: fs.readFileSync(plainFile) }] });
  await plain.disconnect();
  console.log(`sent ${plainFile} without a transaction`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
