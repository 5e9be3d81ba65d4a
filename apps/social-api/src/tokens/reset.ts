import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config';
import { invalidResetToken } from '../errors';
import type { Passwords } from '../users/passwords';
import type { UsersRepository } from '../users/repository';
import { resetFingerprint, sameDigest } from './jwt';
import { resetPasswordMail, type Mailer } from './mailer';
import type { TokenService } from './service';

export interface PasswordResetDependencies {
  config: Pick<Config, 'resetTokenMs' | 'passwordResetUrl'>;
  clock: () => Date;
  users: UsersRepository;
  tokens: TokenService;
  passwords: Passwords;
  /** Undefined when mail is not configured (production without MAIL_SERVER). */
  mailer: Mailer | undefined;
}

/**
 * Password resets by mailed link. The link's token carries a fingerprint of the password it
 * replaces, so it works once; a reset also ends every session of the user.
 */
export function createPasswordReset({
  config,
  clock,
  users,
  tokens,
  passwords,
  mailer,
}: PasswordResetDependencies) {
  return {
    /**
     * Mails a reset link when the address is known, and says nothing either way (addresses
     * cannot be probed). `log` hears of a mail that could not be sent, or could not be made
     * because mail is not configured.
     */
    async request(email: string, log: FastifyBaseLogger): Promise<void> {
      const user = await users.findWithHashByEmail(email);
      if (!user) return;
      if (!mailer) {
        // Neither the link nor the address: only who asked, so an operator can follow up.
        log.warn(
          { userId: user.id },
          'password reset requested but reset mail is not configured (MAIL_SERVER is not set)',
        );
        return;
      }
      const token = tokens.jwt.resetToken(
        user.email,
        resetFingerprint(user),
        new Date(clock().getTime() + config.resetTokenMs),
      );
      const url = `${config.passwordResetUrl}?token=${token}`;
      // Not awaited: neither the SMTP server's speed nor its failure shows to the caller.
      void mailer
        .send(resetPasswordMail(user.email, user.username, url))
        .catch((err: unknown) => log.error({ err }, 'reset mail not sent'));
    },

    /** Sets a new password with a reset link's token; a bad, expired or already used token is a 400 on `token`. */
    async reset(token: string, newPassword: string): Promise<void> {
      const claims = tokens.jwt.resetClaims(token, clock());
      const user = claims ? await users.findWithHashByEmail(claims.email) : undefined;
      if (!claims || !user || !sameDigest(resetFingerprint(user), claims.fingerprint))
        throw invalidResetToken();
      // Replaced only if still the password the link was made for: two racing resets, one winner.
      // The link was mailed to the address, so following it proves the address (see oauth2-flow).
      const replaced = await users.replacePassword(
        user.id,
        user.password_hash,
        await passwords.hash(newPassword),
        { provenEmail: claims.email },
      );
      if (!replaced) throw invalidResetToken();
      await tokens.revokeAll(user.id);
    },
  };
}

export type PasswordReset = ReturnType<typeof createPasswordReset>;
