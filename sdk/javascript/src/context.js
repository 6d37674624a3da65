// The verified caller of a request (`Context`) and the role checks handlers make with it, as
// the Rust SDK's `engines/sdk/src/context.rs`.

import { ApiError } from './request.js';

/**
 * Who is calling, as established by the host from the bearer token, plus the request's
 * correlation id. Storage and the other imports are already scoped to `tenantId`.
 */
export class Context {
  constructor({ tenantId, workspaceId = undefined, userId, role, tokenType = 'user', correlationId = '' }) {
    this.tenantId = tenantId;
    this.workspaceId = workspaceId ?? undefined;
    this.userId = userId;
    /** `owner`, `editor` or `viewer`. */
    this.role = role;
    /** `user`, `guest` or `agent`. */
    this.tokenType = tokenType;
    this.correlationId = correlationId;
  }

  /** A context for tests: no workspace, token type `user`, correlation id `test`. */
  static forTests(tenantId, userId, role = 'editor') {
    return new Context({ tenantId, userId, role, tokenType: 'user', correlationId: 'test' });
  }

  /** True for the `owner` role. */
  isOwner() {
    return this.role === 'owner';
  }

  /** True for a `guest` token. */
  isGuest() {
    return this.tokenType === 'guest';
  }

  /** True when the caller may write: role `owner` or `editor`, and not a guest token. */
  canWrite() {
    return (this.role === 'owner' || this.role === 'editor') && !this.isGuest();
  }

  /** 403 unless the caller may write (viewers and guest tokens may not). */
  requireWriter() {
    if (!this.canWrite()) throw ApiError.forbidden();
  }

  /** 403 unless the caller is an owner (with a non-guest token). */
  requireOwner() {
    if (!(this.isOwner() && !this.isGuest())) throw ApiError.forbidden();
  }
}
