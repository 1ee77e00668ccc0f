// Zod tool models for the tool-call corpus: their JSON Schema as Zod 4's own `z.toJSONSchema()`
// writes it (draft 2020-12) and valid calls (`schema.parse(value)` then `JSON.stringify`).
//
// Usage: node zod_models.mjs OUT.json   (with `zod` resolvable, e.g. NODE_PATH=<dir>/node_modules)
// tests/corpus/tool_models.py --zod OUT.json adds them to the corpus (mutations, jsonschema).
import { writeFileSync } from 'node:fs';
import { z } from 'zod';

const Unit = z.enum(['celsius', 'fahrenheit']);
const models = {
  get_weather: [z.object({ city: z.string().max(64), unit: Unit.optional(), days: z.number().int().min(1).max(14).optional() }),
    [{ city: 'Lisbon', unit: 'celsius', days: 3 }, { city: 'Porto' }]],
  set_timer: [z.strictObject({ seconds: z.number().int().positive().max(86400), label: z.string().nullable() }),
    [{ seconds: 300, label: null }]],
  say: [z.object({ text: z.string().min(1).max(500), interruptible: z.boolean(), confidence: z.number().min(0).max(1) }),
    [{ text: 'Olá', interruptible: true, confidence: 0.5 }]],
  book_flight: [z.object({ origin: z.string().length(3), destination: z.string().length(3),
    cabin: z.enum(['economy', 'business']), passengers: z.number().int().min(1).max(9) }),
    [{ origin: 'LIS', destination: 'OPO', cabin: 'economy', passengers: 2 }]],
  create_order: [z.object({ customer: z.number().int().min(1),
    items: z.array(z.object({ sku: z.string(), qty: z.number().int().min(1) })).min(1).max(20), note: z.string().optional() }),
    [{ customer: 7, items: [{ sku: 'A1', qty: 2 }] }]],
  control_lights: [z.object({ room: z.literal(['kitchen', 'office']), on: z.boolean(), brightness: z.number().int().min(0).max(100).nullable() }),
    [{ room: 'office', on: true, brightness: 80 }, { room: 'kitchen', on: false, brightness: null }]],
  pet: [z.object({ pet: z.discriminatedUnion('kind', [z.object({ kind: z.literal('cat'), lives: z.number().int().max(9) }),
    z.object({ kind: z.literal('dog'), good: z.boolean() })]), owner: z.string() }),
    [{ pet: { kind: 'cat', lives: 7 }, owner: 'Rui' }]],
  query: [z.object({ table: z.string(), columns: z.array(z.string()).min(1), filters: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])) }),
    [{ table: 'users', columns: ['id'], filters: { active: true } }]],
  annotate: [z.object({ id: z.string().describe('Document id'), labels: z.record(z.string(), z.any()), when: z.iso.datetime().optional() }),
    [{ id: 'd1', labels: { a: [1, { b: null }] }, when: '2026-12-01T10:00:00Z' }]],
};

const out = [];
for (const [name, [schema, calls]] of Object.entries(models)) {
  out.push({
    name,
    schema: z.toJSONSchema(schema),
    calls: calls.map((c) => schema.parse(c)),
  });
}
writeFileSync(process.argv[2], JSON.stringify({ zod: '4', models: out }, null, 1));
console.log(`zod models: ${out.length} -> ${process.argv[2]}`);
