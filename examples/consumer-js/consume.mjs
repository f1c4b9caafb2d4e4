// An analyst-side reader of dpsurv's output topics in JavaScript, written
// only against the wire formats (kafkajs and Apache Arrow JS, no dpsurv
// code), the counterpart of examples/consumer (Go):
//
//   - the sanitized topic (tte.sanitized.v1): one Arrow IPC stream per
//     message; each field's mechanism, epsilon and guarantee in the field
//     metadata, the time unit in the schema metadata. Arrow JS returns an
//     int64 column's values as BigInt: the TE-Sanitizer's time is int64, so
//     convert it with Number() (exact below 2^53, far beyond any time_max);
//   - the fit topic (dpsurv.fit.v1): one JSON document per release, key
//     <aggregate>/<window_start_unix>/<cohort>; null stands for R's NA;
//     beside the releases, the per-patient privacy statement
//     (dpsurv.patient_statement.v1, key patient_statement): dispatch on
//     "schema";
//   - the fit Arrow topic (dpsurv.fit.km.v1, default <fit topic>.arrow): the
//     curve of each km release as an Arrow IPC stream.
//
// It prints the sanitized rows as CSV and one line per release, per
// statement and per curve table, then stops after --idle milliseconds without a new message
// (with --to-end 1: as soon as every topic is read up to where it ended when it started):
//
//   cd examples/consumer-js && npm ci
//   node consume.mjs --brokers 127.0.0.1:9092 --sanitized-topic ehr.tte.sanitized --fit-topic ehr.tte.fits
//
// Delivery is at least once: a release can arrive twice (byte-identical),
// so keep the last message per key.
import { Kafka, logLevel } from 'kafkajs';
import { tableFromIPC } from 'apache-arrow';

function flags(argv) {
  const f = { brokers: '127.0.0.1:9092', 'sanitized-topic': 'ehr.tte.sanitized', 'fit-topic': 'ehr.tte.fits',
    'curve-topic': '', group: 'analyst-js', idle: '5000', 'to-end': '' };
  for (let i = 0; i < argv.length; i += 2) {
    const k = argv[i].replace(/^--?/, '');
    if (!(k in f) || i + 1 >= argv.length) throw new Error(`usage: consume.mjs [--${Object.keys(f).join(' V] [--')} V]`);
    f[k] = argv[i + 1];
  }
  if (f['curve-topic'] === '' && f['fit-topic'] !== '') f['curve-topic'] = f['fit-topic'] + '.arrow';
  return f;
}

// A cell as text: int64 (BigInt) as a plain integer, null as empty.
function cell(v) {
  if (v === null || v === undefined) return '';
  if (typeof v === 'bigint') return Number(v).toString();
  return String(v);
}

function csvLine(values) {
  return values.map((v) => (/[",\n]/.test(v) ? `"${v.replaceAll('"', '""')}"` : v)).join(',');
}

const printedSchemas = new Set();

function sanitized(value) {
  const table = tableFromIPC(value);
  const meta = table.schema.metadata;
  const schema = meta.get('dpsurv.schema') ?? 'tte.sanitized.v1';
  const columns = table.schema.fields.map((f) => f.name);
  const sig = columns.join(',');
  if (!printedSchemas.has(sig)) {
    printedSchemas.add(sig);
    console.log(`# ${schema}, time unit ${meta.get('dpsurv.time_unit') ?? '?'}`);
    for (const f of table.schema.fields) {
      const m = f.metadata;
      console.log(`# field ${f.name}: mechanism ${JSON.stringify(m.get('dpsurv.mechanism') ?? '')}, guarantee ${JSON.stringify(m.get('dpsurv.guarantee') ?? '')}, epsilon ${JSON.stringify(m.get('dpsurv.epsilon') ?? '')}, window ${JSON.stringify(m.get('dpsurv.window') ?? '')}`);
    }
    console.log(csvLine(columns));
  }
  for (const row of table) {
    console.log(csvLine(columns.map((c) => cell(row[c]))));
  }
  return table.numRows;
}

// The fit topic also carries the service's per-patient privacy statement
// (schema dpsurv.patient_statement.v1, key patient_statement): what one
// patient can lose across every output, computed from the configuration.
function statement(key, s) {
  const f = (v) => (v === null || v === undefined ? 'unbounded' : v.toFixed(2));
  const st = s.statement;
  const central = f(st.central_cap) + (st.central_cap_scope ? ` (budget ${st.central_cap_scope})` : '');
  console.log(`statement ${key}: one patient loses at most ${f(st.total_one_version)} with one version of the record, ${f(st.total_two_versions)} with two; central releases ${central}; sanitized topic ${st.sanitized_loss_per_version.toFixed(2)} per version`);
}

function fit(key, value) {
  const f = JSON.parse(value.toString('utf8'));
  if (f.schema === 'dpsurv.patient_statement.v1') return statement(key, f);
  const median = f.median === null || f.median === undefined ? 'NA' : String(f.median);
  console.log(`fit ${key}: ${f.kind} ${f.method} epsilon ${f.epsilon} (${f.guarantee}), n ${f.n}, median ${median}`);
}

function curve(value) {
  const table = tableFromIPC(value);
  const key = table.schema.metadata.get('dpsurv.key');
  console.log(`curve ${key}: ${table.numRows} rows, columns ${table.schema.fields.map((x) => x.name).join(',')}`);
}

async function main() {
  const f = flags(process.argv.slice(2));
  const kafka = new Kafka({ clientId: 'dpsurv-consumer-js', brokers: f.brokers.split(','), logLevel: logLevel.NOTHING });
  // A fetch waits at most 500 ms for new data, so stopping after --idle does
  // not wait out kafkajs's default 5 s long poll.
  const consumer = kafka.consumer({ groupId: f.group, maxWaitTimeInMs: 500 });
  const topics = [f['sanitized-topic'], f['fit-topic'], f['curve-topic']].filter((t) => t !== '');
  const toEnd = f['to-end'] !== '' && f['to-end'] !== '0';
  const left = toEnd ? await unread(kafka, f.group, topics) : new Map();
  await consumer.connect();
  await consumer.subscribe({ topics, fromBeginning: true });
  const counts = Object.fromEntries(topics.map((t) => [t, 0]));
  let timer;
  let atEnd = toEnd && left.size === 0;
  const idle = Number(f.idle);
  const stopped = new Promise((resolve) => {
    const arm = () => { clearTimeout(timer); timer = setTimeout(resolve, idle); };
    arm();
    if (toEnd && left.size === 0) resolve();
    consumer.run({
      eachMessage: async ({ topic, partition, message }) => {
        arm();
        counts[topic]++;
        if (topic === f['sanitized-topic']) sanitized(message.value);
        else if (topic === f['fit-topic']) fit(message.key.toString('utf8'), message.value);
        else curve(message.value);
        const k = `${topic}/${partition}`;
        if (left.has(k) && BigInt(message.offset) + 1n >= left.get(k)) {
          left.delete(k);
          if (toEnd && left.size === 0) { atEnd = true; resolve(); }
        }
      },
    }).catch((e) => { console.error('consume.mjs:', e.message); process.exitCode = 1; resolve(); });
  });
  await stopped;
  clearTimeout(timer);
  await consumer.disconnect();
  const how = atEnd ? 'read to its end' : `idle for ${idle} ms`;
  for (const t of topics) console.error(`consume.mjs: ${counts[t]} messages from ${t} (${how})`);
}

// unread maps topic/partition to the partition's end offset for every
// partition with messages the group has not read yet (its committed
// offset, else the first offset, is before the end).
async function unread(kafka, groupId, topics) {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const left = new Map();
    for (const topic of topics) {
      const committed = new Map();
      let offsets = [];
      try {
        offsets = await admin.fetchOffsets({ groupId, topics: [topic] });
      } catch (e) {
        if (e.type !== 'GROUP_ID_NOT_FOUND') throw e; // a new group: no commits
      }
      for (const t of offsets) {
        for (const p of t.partitions) committed.set(p.partition, BigInt(p.offset)); // -1: none
      }
      for (const p of await admin.fetchTopicOffsets(topic)) {
        const c = committed.get(p.partition) ?? -1n;
        const from = c > BigInt(p.low) ? c : BigInt(p.low);
        if (from < BigInt(p.high)) left.set(`${topic}/${p.partition}`, BigInt(p.high));
      }
    }
    return left;
  } finally {
    await admin.disconnect();
  }
}

main().catch((e) => { console.error('consume.mjs:', e.message); process.exit(1); });
