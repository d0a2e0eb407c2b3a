// Documents the sandbox reads as JSON text, parsed only when the code first looks at them. env.db, env.files and
// env.ai answer JSON text; `await env.db("items").list()` resolves to an object that holds that text until any
// operation on it (a property read, Object.keys, JSON.stringify, a write...) parses it into the object, after which
// the object behaves as the parsed value would in every way but identity. `Response.json(value)` of a value nobody
// looked at sends the text itself: parsing and writing the same JSON again inside QuickJS is the dear part of a
// handler that passes documents on (a list of 20 costs more than the rest of the request). The host makes every such
// text exactly what JSON.stringify(JSON.parse(text)) would write (marshal.ts canonicalJson), so the answer's bytes are
// the same either way.
//
// The object is a Proxy over an empty object that the first operation fills; the text and the Proxy's target are
// kept in WeakMaps only this prelude reaches. A promise resolved with it reads its `then`, which is answered without
// parsing: only text without a "then" anywhere stays unparsed, so the parsed object's `then` would be its prototype's,
// as the empty target's is.

export const PRELUDE_JSON = String.raw`
const parseJson = JSON.parse;
const { defineProperty: defineOwn, keys: ownKeysOf } = Object;
const reflectGet = Reflect.get;
/** Target of a Proxy not yet parsed → its JSON text. */
const unparsed = new WeakMap();
/** Lazy Proxy → its target. */
const lazyTargets = new WeakMap();
function parsedTarget(target) {
  const text = unparsed.get(target);
  if (text === undefined) return target;
  unparsed.delete(target);
  const value = parseJson(text);
  const keys = ownKeysOf(value);
  for (let i = 0; i < keys.length; i++) defineOwn(target, keys[i], { value: value[keys[i]], writable: true, enumerable: true, configurable: true });
  return target;
}
const LAZY_TRAPS = {
  get(target, key, receiver) {
    // Unparsed text has no "then" key (the host saw to it): the parsed object's then is its prototype's, as the
    // empty target's is.
    if (key === "then") return reflectGet(target, key, receiver);
    return reflectGet(parsedTarget(target), key, receiver);
  },
};
for (const trap of ["set", "has", "deleteProperty", "ownKeys", "getOwnPropertyDescriptor", "defineProperty", "getPrototypeOf", "setPrototypeOf", "isExtensible", "preventExtensions"]) {
  const forward = Reflect[trap];
  LAZY_TRAPS[trap] = (target, a, b, c) => forward(parsedTarget(target), a, b, c);
}
/**
 * The value of JSON text from the host: an object stays text until first used. The host writes the text of an object
 * whose text holds "then" with a space in front (marshal.ts): that one is parsed at once.
 */
function lazyJson(text) {
  if (text.charCodeAt(0) !== 123) return parseJson(text);
  const target = {};
  unparsed.set(target, text);
  const proxy = new Proxy(target, LAZY_TRAPS);
  lazyTargets.set(proxy, target);
  return proxy;
}
/** The JSON text of a lazy value nobody has looked at, else undefined. */
function unparsedJson(value) {
  const target = lazyTargets.get(value);
  return target === undefined ? undefined : unparsed.get(target);
}
`;
