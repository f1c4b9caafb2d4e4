// Writes tte.v1 messages with Apache Arrow JS (an Arrow implementation
// independent of the Go one the service uses), in both IPC formats, as a
// producer would send them. Regenerate from the repository root with:
//   mkdir -p /tmp/arrowjs && (cd /tmp/arrowjs && npm install apache-arrow@21)
//   NODE_PATH=/tmp/arrowjs/node_modules node testdata/arrowjs/make_fixtures.mjs testdata/arrowjs
// The rows are synthetic. Row 3 has an unknown cohort label ("9") so the
// fixture also exercises a row-level dead letter.
import { createRequire } from 'node:module';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const require = createRequire(join(process.env.NODE_PATH || '.', 'x.js'));
const arrow = require('apache-arrow');

const out = process.argv[2] || '.';
const table = arrow.tableFromArrays({
  id: ['p-001', 'p-002', 'p-003', 'p-004', 'p-005'],
  time: Float64Array.from([12, 340.5, 77, 1009, 5]),
  event: [true, false, true, false, true],
  cohort: ['1', '2', '9', '1', '2'],
});
writeFileSync(join(out, 'tte_stream.arrows'), arrow.tableToIPC(table, 'stream'));
writeFileSync(join(out, 'tte_file.arrow'), arrow.tableToIPC(table, 'file'));
console.log('apache-arrow', arrow.util ? 'ok' : '', 'rows', table.numRows);
