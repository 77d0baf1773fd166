/**
 * What was compiled for a route schema, by the schema's JSON text and a key (the request part, the
 * status), so every app the process builds (tests build hundreds) finds its routes' schemas compiled.
 * By text rather than by object: many routes build their schemas where they are registered, a new
 * object in each app (81 of a build's 220 compilations, ~180 ms of each later app's ~400 ms of CPU).
 * Everything a compiler reads of a schema is in its JSON (TypeBox's symbols are not read by Ajv or
 * fast-json-stringify).
 */
export class CompiledPerSchema<V> {
  private readonly textOf = new WeakMap<object, string>();
  private readonly byText = new Map<string, Map<string, V>>();

  get(schema: object, key: string, compile: () => V): V {
    let text = this.textOf.get(schema);
    if (text === undefined) {
      text = JSON.stringify(schema);
      this.textOf.set(schema, text);
    }
    let byKey = this.byText.get(text);
    if (!byKey) {
      byKey = new Map();
      this.byText.set(text, byKey);
    }
    let value = byKey.get(key);
    if (value === undefined) {
      value = compile();
      byKey.set(key, value);
    }
    return value;
  }
}
