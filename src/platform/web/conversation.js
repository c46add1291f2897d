// The open timeline's items, oldest at the top, kept up to date without disturbing the reader.
// Each refresh touches only what changed: a new item is added, a changed one (a task whose
// status moved) is redrawn, one gone is removed, and every other element stays as it was, so a
// selection survives, an image is not fetched again, and the list's scroll position holds.
// A reader at the bottom follows new items down; a reader who scrolled up stays where they are
// and is offered a button to the newest.

/** How close to the end (px) still counts as "at the bottom". */
const BOTTOM_SLACK = 8;

/**
 * @param {HTMLElement} list the scrolling list
 * @param {HTMLButtonElement} jump the "new messages below" button
 * @param {(item: object) => HTMLElement} render draws one item
 */
export function createConversation(list, jump, render) {
  let shownTimeline = null;
  // Whether the view follows new items: true while the reader is at the bottom.
  let following = true;

  // Where follow() last put the list: a scroll event arrives after the fact, when content may have
  // grown below (an image decoded), and only a move up from there is the reader's doing.
  let followedTo = 0;
  const atBottom = () => list.scrollTop + list.clientHeight >= list.scrollHeight - BOTTOM_SLACK;
  const follow = () => {
    if (!following) return;
    list.scrollTop = list.scrollHeight;
    followedTo = list.scrollTop;
  };
  list.addEventListener('scroll', () => {
    following = atBottom() || (following && list.scrollTop >= followedTo);
    if (following) {
      jump.hidden = true;
      follow();
    }
  });
  // An image that loads, or a list that changes size, moves the bottom: a follower stays on it.
  list.addEventListener('load', follow, true);
  new ResizeObserver(follow).observe(list);
  jump.addEventListener('click', () => {
    following = true;
    jump.hidden = true;
    follow();
  });

  return {
    /** Shows `items` (newest first, as the API lists them) of the timeline `uuid`. */
    show(uuid, items) {
      const opened = uuid !== shownTimeline;
      if (opened) {
        shownTimeline = uuid;
        list.replaceChildren();
        following = true;
        jump.hidden = true;
      }
      const present = new Map([...list.children].map((li) => [li.dataset.uuid, li]));
      let arrived = false;
      const wanted = items
        .slice()
        .reverse()
        .map((item) => {
          const version = item.updated_at ?? item.created_at;
          const old = present.get(item.content.uuid);
          if (old?.dataset.version === version) return old;
          const li = render(item);
          li.dataset.uuid = item.content.uuid;
          li.dataset.version = version;
          if (old) old.replaceWith(li);
          else arrived = true;
          return li;
        });
      const keep = new Set(wanted);
      for (const li of [...list.children]) if (!keep.has(li)) li.remove();
      wanted.forEach((li, index) => {
        const there = list.children[index];
        if (there !== li) list.insertBefore(li, there ?? null);
      });
      if (arrived && !following) jump.hidden = false;
      follow();
    },
    forget() {
      shownTimeline = null;
      list.replaceChildren();
      jump.hidden = true;
    },
  };
}
