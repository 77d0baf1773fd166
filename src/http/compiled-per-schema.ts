/**
 * What was compiled for a route schema, by the schema object and a key (the request part, the status):
 * route schemas are module constants, so every app the process builds finds them compiled.
 */
export class CompiledPerSchema<V> {
  private readonly bySchema = new WeakMap<object, Map<string, V>>();

  get(schema: object, key: string, compile: () => V): V {
    let byKey = this.bySchema.get(schema);
    if (!byKey) {
      byKey = new Map();
      this.bySchema.set(schema, byKey);
    }
    let value = byKey.get(key);
    if (value === undefined) {
      value = compile();
      byKey.set(key, value);
    }
    return value;
  }
}
