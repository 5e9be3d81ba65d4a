import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Forbidden, NotFound } from '../errors';
import { bodyErrors, errors, NoContent, parseId, routeOptions } from '../wire/http';
import {
  collection,
  Paginated,
  parseTimestampCursor,
  type PageRequest,
  type PageSource,
} from '../wire/pagination';
import type { PublicUserRow } from '../users/repository';
import { UserIdParams } from '../users/schemas';
import { createPostsRepository, type PostWithAuthor } from './repository';
import { serializePost } from './serialize';
import { NewPost, Post, PostChanges, PostIdParams } from './schemas';

export const PostPage = Paginated(Post, 'PostPage');
const PAGING_NOTE =
  'Newest first. `after` is a timestamp (one this API emitted works exactly): posts strictly older than it.';

/** Every post collection: newest first, `after` a timestamp. */
const postPages = collection(PostPage, serializePost, parseTimestampCursor);

/**
 * The caller's own posts carry the caller as this request sees it: its `last_seen` is this
 * request's, which the database gets only with the next coalesced write.
 */
const seenBy =
  (caller: PublicUserRow) =>
  (post: PostWithAuthor): PostWithAuthor =>
    post.author.id === caller.id ? { ...post, author: caller } : post;

const pagesSeenBy = (
  caller: PublicUserRow,
  source: PageSource<PostWithAuthor, Date>,
): PageSource<PostWithAuthor, Date> => ({
  exists: source.exists,
  async read(request: PageRequest<Date>) {
    const page = await source.read(request);
    // The page is this request's own: its items are replaced in place.
    const seen = seenBy(caller);
    if (page) for (let i = 0; i < page.items.length; i++) page.items[i] = seen(page.items[i]);
    return page;
  },
});

const postsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const posts = createPostsRepository(app.database.db);
  const { token } = routeOptions('posts', app.requireToken);

  const existingPost = async (idText: string, caller: PublicUserRow) => {
    const post = await posts.findById(parseId(idText));
    if (!post) throw new NotFound();
    return seenBy(caller)(post);
  };

  /** 404 for no such post, 403 for someone else's. */
  const ownPost = async (idText: string, callerId: number) => {
    const id = parseId(idText);
    const author = await posts.authorOf(id);
    if (author === undefined) throw new NotFound();
    if (author !== callerId) throw new Forbidden();
    return id;
  };

  app.post(
    '/posts',
    token({
      summary: 'Create a new post',
      body: NewPost,
      response: { 201: Post, ...bodyErrors(401) },
    }),
    async (request, reply) => {
      return reply
        .status(201)
        .send(
          serializePost(
            seenBy(request.user)(await posts.create(request.user.id, request.body.text, app.clock())),
          ),
        );
    },
  );

  app.get(
    '/posts',
    token({
      summary: 'Retrieve all posts',
      description: PAGING_NOTE,
      ...postPages.schema(401),
    }),
    async (request, reply) => postPages.answer(request.query, pagesSeenBy(request.user, posts.all()), reply),
  );

  app.get(
    '/posts/:id',
    token({
      summary: 'Retrieve a post by id',
      params: PostIdParams,
      response: { 200: Post, ...errors(401, 404) },
    }),
    async (request) => serializePost(await existingPost(request.params.id, request.user)),
  );

  app.put(
    '/posts/:id',
    token({
      summary: 'Edit a post',
      description: 'Only the author may edit (403 otherwise); the timestamp stays.',
      params: PostIdParams,
      body: PostChanges,
      response: { 200: Post, ...bodyErrors(401, 403, 404) },
    }),
    async (request) => {
      const id = await ownPost(request.params.id, request.user.id);
      if (
        request.body.text !== undefined &&
        !(await posts.updateText(id, request.user.id, request.body.text))
      )
        throw new NotFound();
      return serializePost(await existingPost(request.params.id, request.user));
    },
  );

  app.delete(
    '/posts/:id',
    token({
      summary: 'Delete a post',
      description: 'Only the author may delete (403 otherwise).',
      params: PostIdParams,
      response: { 204: NoContent, ...errors(401, 403, 404) },
    }),
    async (request, reply) => {
      const id = await ownPost(request.params.id, request.user.id);
      if (!(await posts.delete(id, request.user.id))) throw new NotFound();
      return reply.status(204).send();
    },
  );

  app.get(
    '/users/:id/posts',
    token({
      summary: 'Retrieve all posts from a user',
      description: PAGING_NOTE,
      params: UserIdParams,
      ...postPages.schema(401, 404),
    }),
    // No lookup first: the page's own statement says when there is no such user (404).
    async (request, reply) =>
      postPages.answer(
        request.query,
        pagesSeenBy(request.user, posts.byAuthor(parseId(request.params.id))),
        reply,
      ),
  );

  app.get(
    '/feed',
    token({
      summary: "Retrieve the user's post feed",
      description: `Your own posts and those of everyone you follow, in one query. ${PAGING_NOTE}`,
      ...postPages.schema(401),
    }),
    async (request, reply) =>
      postPages.answer(request.query, pagesSeenBy(request.user, posts.feed(request.user.id)), reply),
  );
};

export default postsRoutes;
