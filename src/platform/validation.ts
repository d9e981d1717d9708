import { Ajv, type Options } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import { OptionalKind } from '@sinclair/typebox';

/**
 * Bodies are validated strictly: a string where a number belongs is an error, never coerced, and
 * unknown properties are refused rather than silently dropped. Query strings and path parameters
 * arrive as text, so they are coerced to the declared types.
 */
// verbose: a failed pattern's error carries its schema, whose `x-pattern-message` says in words what the pattern wants.
const common: Options = { useDefaults: true, removeAdditional: false, allErrors: true, strict: false, verbose: true };

function makeAjv(options: Options) {
  const ajv = new Ajv({ ...common, ...options });
  addFormats.default(ajv);
  return ajv;
}

const bodyAjv = makeAjv({ coerceTypes: false });
const textAjv = makeAjv({ coerceTypes: 'array' });

/**
 * A body schema marked `Type.Optional` also accepts no body at all (state actions such as
 * `POST /campaigns/{id}/resume` take an empty object or nothing). Fastify hands a missing body to
 * the validator as null, and reads the errors from the function it was given after each call.
 */
export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  const validate = (httpPart === 'body' ? bodyAjv : textAjv).compile(schema as object);
  if (httpPart !== 'body' || (schema as Record<symbol, unknown>)[OptionalKind] !== 'Optional') return validate;
  const optional = (data: unknown): boolean => {
    const valid = data === undefined || data === null || validate(data);
    optional.errors = valid ? null : validate.errors;
    return valid;
  };
  optional.errors = null as typeof validate.errors;
  return optional;
};

/** Tool arguments are data a model wrote: checked as they are, defaults and coercion left out. */
const toolAjv = makeAjv({ useDefaults: false, coerceTypes: false, allErrors: true });

export type ArgumentsCheck = (value: unknown) => string | null;

const compiled = new Map<string, ArgumentsCheck>();
/** Distinct schemas kept compiled (tenants' custom tools come and go; the cache must not grow without end). */
const MAX_COMPILED = 500;

/**
 * Compiles a JSON Schema that a tenant or a tool gives for a tool's arguments. Returns the check
 * (null when the value fits, else the first problem as a sentence), or throws when the schema is
 * not a JSON Schema. Compiled once per distinct schema, whichever object holds it.
 */
export function compileArgumentsSchema(schema: object): ArgumentsCheck {
  const key = JSON.stringify(schema);
  const known = compiled.get(key);
  if (known) return known;
  const validate = toolAjv.compile(schema);
  // ajv keeps every schema object it compiled; this cache is the one that keeps them.
  toolAjv.removeSchema(schema);
  const check: ArgumentsCheck = (value) => {
    if (validate(value)) return null;
    const error = validate.errors![0]!;
    const where = error.instancePath ? error.instancePath.slice(1).replaceAll('/', '.') : 'the arguments';
    const extra = error.keyword === 'required' ? ` (${String(error.params.missingProperty)})` : '';
    return `${where} ${error.message ?? 'is not valid'}${extra}`;
  };
  if (compiled.size >= MAX_COMPILED) compiled.delete(compiled.keys().next().value!);
  compiled.set(key, check);
  return check;
}
