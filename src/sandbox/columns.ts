type Column = Uint8Array | Int32Array | Uint32Array | Float64Array;

/** A copy of `column` with room for `capacity` values (typed arrays cannot grow in place). */
export function grown<T extends Column>(column: T, capacity: number): T {
  const next = new (column.constructor as new (n: number) => T)(capacity);
  next.set(column);
  return next;
}
