// A form whose answer shows a secret once (a new user's password, a reset password) carries a
// one-time value; the change it makes and the use of that value commit together. The same form sent
// again — a reload re-POSTs it — finds its value used, and changes nothing and shows nothing.
import type { Db } from '../db/schema.ts'

/** True when `nonce` was unused for `userId` (it is used now, with the caller's transaction); false when the form was sent before. */
export async function useFormNonce(trx: Db, { userId, nonce }: { userId: string; nonce: string }): Promise<boolean> {
  const inserted = await trx.insertInto('form_nonces').values({ user_id: userId, nonce }).onConflict((oc) => oc.columns(['user_id', 'nonce']).doNothing()).returning('nonce').executeTakeFirst()
  return inserted !== undefined
}
