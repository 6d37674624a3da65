// The per-tenant bookkeeping the default lifecycle hooks keep, as the Rust SDK's
// `engines/sdk/src/tenancy.rs`: the `tenant` record written by provisioning and the
// `users/<user_id>` records (JSON, snake_case fields, as the Rust SDK stores them).

import { storage } from './host.js';
import { nowRfc3339 } from './time.js';

/** The key of the tenant record. */
export const TENANT_KEY = 'tenant';

/** The key of a user's record: `users/<user_id>`. */
export function userKey(userId) {
  return `users/${userId}`;
}

/**
 * Writes the tenant record `{tenant_id, tenant_short_id, name, provisioned_at}` (idempotent: a
 * second call keeps the first `provisioned_at` and refreshes slug and name).
 */
export function recordTenant(tenant) {
  const previous = storage.getJson(TENANT_KEY);
  const record = {
    tenant_id: tenant.tenantId,
    tenant_short_id: tenant.tenantShortId,
    name: tenant.name,
    provisioned_at: previous?.provisioned_at ?? nowRfc3339(),
  };
  storage.putJson(TENANT_KEY, record);
  return record;
}

/** The tenant record, when the tenant is provisioned. */
export function tenantRecord() {
  return storage.getJson(TENANT_KEY);
}

/** Writes `users/<user_id>` (idempotent like `recordTenant`). */
export function recordUser(user) {
  const key = userKey(user.userId);
  const previous = storage.getJson(key);
  const record = {
    tenant_id: user.tenantId,
    user_id: user.userId,
    email: user.email,
    first_name: user.firstName,
    last_name: user.lastName,
    user_type: user.userType,
    provisioned_at: previous?.provisioned_at ?? nowRfc3339(),
  };
  storage.putJson(key, record);
  return record;
}

/** A user's record, when provisioned. */
export function userRecord(userId) {
  return storage.getJson(userKey(userId));
}

/** Removes `users/<user_id>` and everything under `users/<user_id>/`. */
export function forgetUser(userId) {
  const key = userKey(userId);
  storage.delete(key);
  storage.deletePrefix(`${key}/`);
}
