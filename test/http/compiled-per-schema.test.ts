import { Type } from 'typebox';
import { describe, expect, it } from 'vitest';
import { CompiledPerSchema } from '../../src/http/compiled-per-schema.js';
import { OPTIONAL_BODY } from '../../src/http/validation.js';

/** Route schemas built where a route is registered are new objects in every app: compiled once all the same. */
describe('what is compiled for a route schema', () => {
  const query = () => Type.Object({ page: Type.Integer({ minimum: 1, default: 1 }), q: Type.Optional(Type.String()) });

  it('is compiled once for equal schemas, whichever object each app built', () => {
    const compiled = new CompiledPerSchema<string>();
    let compilations = 0;
    const compile = () => `validator ${++compilations}`;
    const first = compiled.get(query(), 'text', compile);
    const again = compiled.get(query(), 'text', compile);
    expect(again).toBe(first);
    expect(compilations).toBe(1);
  });

  it('is compiled again for another key, or a schema that differs in anything a compiler reads', () => {
    const compiled = new CompiledPerSchema<string>();
    let compilations = 0;
    const compile = () => `validator ${++compilations}`;
    const schema = query();
    expect(compiled.get(schema, 'text', compile)).toBe('validator 1');
    expect(compiled.get(schema, 'body', compile)).toBe('validator 2');
    const bounds = Type.Object({ page: Type.Integer({ minimum: 2, default: 1 }), q: Type.Optional(Type.String()) });
    expect(compiled.get(bounds, 'text', compile)).toBe('validator 3');
    // Optional properties are in `required`, an optional body in its marker: both part of the text.
    const required = Type.Object({ page: Type.Integer({ minimum: 1, default: 1 }), q: Type.String() });
    expect(compiled.get(required, 'text', compile)).toBe('validator 4');
    const optionalBody = Type.Object(
      { page: Type.Integer({ minimum: 1, default: 1 }), q: Type.Optional(Type.String()) },
      { [OPTIONAL_BODY]: true },
    );
    expect(compiled.get(optionalBody, 'text', compile)).toBe('validator 5');
    expect(compiled.get(query(), 'text', compile)).toBe('validator 1');
  });
});
