package adapter

import "github.com/dop251/goja"

// setupSource prepares a fresh runtime before any adapter code runs in it:
// it removes what is nondeterministic or allocates without bound in one
// built-in call, guards the built-ins whose output grows with a number
// they are given, then freezes every object reachable from the global
// object, so that no call can leave state behind for the next one (a
// frozen intrinsic cannot be changed; top-level declarations are the
// call's own, see sourcePrefix).
//
// limit(kind, detail) stops the call over a limit (it does not return).
const setupSource = `(function (limit, maxString, maxArray, maxDepth) {
"use strict";
const apply = Reflect.apply, construct = Reflect.construct, define = Object.defineProperty;
const G = globalThis;

// Nondeterministic, or whole buffers allocated by one call.
for (const name of ["ArrayBuffer", "SharedArrayBuffer", "DataView", "Int8Array", "Uint8Array",
	"Uint8ClampedArray", "Int16Array", "Uint16Array", "Int32Array", "Uint32Array", "Float32Array",
	"Float64Array", "BigInt64Array", "BigUint64Array", "Atomics", "WeakRef", "FinalizationRegistry"]) {
	delete G[name];
}
delete Math.random;
delete Symbol.for;    // a registry shared by every call
delete Symbol.keyFor;

const method = (obj, name, f) => define(obj, name, {value: f, writable: true, enumerable: false, configurable: true});

// Strings whose length is a number the caller gives.
const SP = String.prototype;
const guardString = (name, size) => {
	const orig = SP[name];
	method(SP, name, {[name](...args) {
		if (this !== null && this !== undefined) {
			const n = size(String(this).length, Number(args[0]));
			if (n > maxString) {
				limit("string", "String.prototype." + name + " would make " + n + " characters, over " + maxString);
			}
		}
		return apply(orig, this, args);
	}}[name]);
};
guardString("repeat", (len, count) => len * count);
guardString("padStart", (len, target) => target);
guardString("padEnd", (len, target) => target);

// Arrays: every Array method on a (possibly sparse) array or array-like
// whose length is over the bound, and the Array constructor and Array.from
// asked for one, stop the call.
const lengthOf = (o) => {
	if (o === null || o === undefined) {
		return 0;
	}
	const n = Number(o.length);
	return n > 0 ? n : 0;
};
const checkLength = (n, what) => {
	if (n > maxArray) {
		limit("array", what + " of length " + n + ", over " + maxArray);
	}
};
const AP = Array.prototype;
for (const name of Object.getOwnPropertyNames(AP)) {
	const orig = AP[name];
	if (name === "constructor" || typeof orig !== "function") {
		continue;
	}
	method(AP, name, {[name](...args) {
		checkLength(lengthOf(this), "Array.prototype." + name + " on an array");
		return apply(orig, this, args);
	}}[name]);
}
const OrigArray = Array;
const GuardedArray = function Array(...args) {
	if (args.length === 1 && typeof args[0] === "number") {
		checkLength(args[0], "new Array");
	}
	return new.target ? construct(OrigArray, args, new.target) : apply(OrigArray, undefined, args);
};
GuardedArray.prototype = AP;
const origFrom = OrigArray.from;
method(GuardedArray, "from", {from(...args) {
	checkLength(lengthOf(args[0]), "Array.from");
	return apply(origFrom, this === GuardedArray ? OrigArray : this, args);
}}.from);
method(GuardedArray, "of", OrigArray.of);
method(GuardedArray, "isArray", OrigArray.isArray);
method(AP, "constructor", GuardedArray);
method(G, "Array", GuardedArray);

// JSON.stringify looks for cycles by comparing each object with all those
// above it: quadratic in the nesting, in one uninterruptible call. The
// nesting is bounded first (by a walk that is interruptible).
const origStringify = JSON.stringify;
const keys = Object.keys;
const checkDepth = (v, depth) => {
	if (typeof v !== "object" || v === null) {
		return;
	}
	if (depth >= maxDepth) {
		limit("output", "JSON.stringify of a value nested deeper than " + maxDepth + " levels (or that refers to itself)");
	}
	for (const k of keys(v)) {
		checkDepth(v[k], depth + 1);
	}
};
method(JSON, "stringify", {stringify(...args) {
	checkDepth(args[0], 0);
	return apply(origStringify, this, args);
}}.stringify);

// Nothing reachable from here may change any more.
const seen = new Set();
const freeze = (o) => {
	if ((typeof o !== "object" && typeof o !== "function") || o === null || seen.has(o)) {
		return;
	}
	seen.add(o);
	Object.freeze(o);
	for (const key of Reflect.ownKeys(o)) {
		const d = Reflect.getOwnPropertyDescriptor(o, key);
		if ("value" in d) {
			freeze(d.value);
		} else {
			freeze(d.get);
			freeze(d.set);
		}
	}
	freeze(Reflect.getPrototypeOf(o));
};
freeze(G);
})`

// setupProgram is setupSource compiled once for every runtime.
var setupProgram = goja.MustCompile("setup.js", setupSource, true)
