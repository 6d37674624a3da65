// The checks the host makes of an engine's API description when it loads the engine
// (`crates/runtime/src/api_description.rs`): an engine whose description fails them is refused.
// The test kit runs them on `describe-api`, so a test fails where the host would.

const MAX_API_DESCRIPTION_BYTES = 2 * 1024 * 1024;
const SCHEMAS = '#/components/schemas/';
const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

function isObject(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function checkPath(path) {
  const routed = path.startsWith('/api/v1/') && path.length > '/api/v1/'.length;
  const clean =
    path
      .split('/')
      .slice(1)
      .every((segment) => segment !== '' && segment !== '.' && segment !== '..') && !/[?#\\]/.test(path);
  if (!(routed && clean)) {
    throw new Error(`the path ${JSON.stringify(path)} is not a clean path under /api/v1/ (the engine routes the host serves)`);
  }
}

function checkReferences(value, schemas, where) {
  if (Array.isArray(value)) {
    for (const item of value) checkReferences(item, schemas, where);
    return;
  }
  if (!isObject(value)) return;
  if (Object.prototype.hasOwnProperty.call(value, '$ref')) {
    const reference = value.$ref;
    if (typeof reference !== 'string' || !reference.startsWith(SCHEMAS)) {
      throw new Error(`${where}: the reference ${JSON.stringify(reference)} does not point at ${SCHEMAS}`);
    }
    const name = reference.slice(SCHEMAS.length);
    if (!Object.prototype.hasOwnProperty.call(schemas, name) && name !== 'ErrorBody') {
      throw new Error(`${where}: the reference ${JSON.stringify(reference)} names no schema of the engine`);
    }
  }
  for (const [key, child] of Object.entries(value)) if (key !== '$ref') checkReferences(child, schemas, where);
}

/**
 * Throws what the host would refuse the description `text` for: larger than 2 MiB, not a JSON
 * object, schema names other than letters, digits, `.`, `_`, `-`, paths outside `/api/v1/`,
 * path items with other keys than the operations, `summary`, `description` and `parameters`,
 * operations without `responses`, `$ref`s to anything but the fragment's schemas and the host's
 * `ErrorBody`.
 */
export function checkApiDescription(text) {
  if (new TextEncoder().encode(text).length > MAX_API_DESCRIPTION_BYTES) {
    throw new Error(`the API description is larger than ${MAX_API_DESCRIPTION_BYTES} bytes`);
  }
  if (text.trim() === '') return;
  let fragment;
  try {
    fragment = JSON.parse(text);
  } catch (error) {
    throw new Error(`the API description is not JSON: ${error.message}`);
  }
  if (!isObject(fragment)) throw new Error('the API description is not a JSON object');
  const schemas = fragment.components?.schemas ?? {};
  if (!isObject(schemas)) throw new Error('components.schemas is not an object');
  for (const name of Object.keys(schemas)) {
    if (!/^[A-Za-z0-9._-]+$/.test(name)) {
      throw new Error(`the schema name ${JSON.stringify(name)} is not letters, digits, '.', '_' and '-'`);
    }
    checkReferences(schemas[name], schemas, `schema ${JSON.stringify(name)}`);
  }
  const paths = fragment.paths ?? {};
  if (!isObject(paths)) throw new Error('paths is not an object');
  for (const [path, item] of Object.entries(paths)) {
    checkPath(path);
    if (!isObject(item)) throw new Error(`the path item ${JSON.stringify(path)} is not an object`);
    for (const key of Object.keys(item)) {
      if (!METHODS.includes(key) && !['summary', 'description', 'parameters'].includes(key)) {
        throw new Error(`the path item ${JSON.stringify(path)} has ${JSON.stringify(key)}; operations are ${METHODS.join(', ')}`);
      }
    }
    for (const method of METHODS) {
      const operation = item[method];
      if (operation === undefined) continue;
      const where = `${method.toUpperCase()} ${path}`;
      if (!isObject(operation)) throw new Error(`${where}: the operation is not an object`);
      if (!isObject(operation.responses)) throw new Error(`${where}: the operation has no responses object`);
      if (operation.operationId !== undefined && typeof operation.operationId !== 'string') {
        throw new Error(`${where}: operationId is not a string`);
      }
    }
    checkReferences(item, schemas, `the path item ${JSON.stringify(path)}`);
  }
}
