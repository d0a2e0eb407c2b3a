// The complete example app of the developer reference (topic browser_library): a todo list with a photo per item,
// using me/signIn, db (add, list, update, remove, subscribe) and files (upload, url, remove). Kept as files so tests
// can publish and run exactly what the reference prints. Plain JS without template literals, so it can sit in one here.

const SERVICE_JSON = `{
  "collections": {
    "todos": { "read": "creator", "create": "signed_in", "update": "creator", "delete": "creator" }
  },
  "buckets": {
    "photos": { "read": "creator", "create": "signed_in", "delete": "creator", "maxFileSize": "5 MB" }
  }
}`;

const INDEX_HTML = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Todos</title>
  <script src="/_hatch/client.js"></script>
  <style>
    body { font: 16px system-ui, sans-serif; max-width: 32rem; margin: 2rem auto; padding: 0 1rem; }
    li { display: flex; gap: .5rem; align-items: center; margin: .4rem 0; }
    li img { width: 3rem; height: 3rem; object-fit: cover; border-radius: .3rem; }
    .done span { text-decoration: line-through; color: #888; }
  </style>
</head>
<body>
  <h1>Todos</h1>
  <p id="who"></p>
  <form id="add" hidden>
    <input id="text" required maxlength="200" placeholder="What needs doing?">
    <input id="photo" type="file" accept="image/*">
    <button>Add</button>
  </form>
  <p id="error" role="alert"></p>
  <ul id="list"></ul>
  <script>
    const $ = (id) => document.getElementById(id);
    const todos = hatch.db("todos");
    const photos = hatch.files("photos");
    const items = new Map(); // id -> document, oldest first

    function showError(error) {
      $("error").textContent = error.message; // every failure is an Error with a code and a message
    }

    function el(tag, props) {
      return Object.assign(document.createElement(tag), props);
    }

    function render() {
      $("list").replaceChildren(...[...items.values()].map((todo) => {
        const li = el("li", { className: todo.done ? "done" : "" });
        const box = el("input", { type: "checkbox", checked: todo.done });
        box.onchange = () => todos.update(todo.id, { done: box.checked }).then(show, showError);
        li.append(box, el("span", { textContent: todo.text })); // textContent: users' text is never HTML
        if (todo.photo) li.append(el("img", { src: photos.url(todo.photo), alt: "" }));
        const remove = el("button", { textContent: "Delete" });
        remove.onclick = async () => {
          try {
            await todos.remove(todo.id);
            if (todo.photo) await photos.remove(todo.photo);
            items.delete(todo.id);
            render();
          } catch (error) {
            showError(error);
          }
        };
        li.append(remove);
        return li;
      }));
    }

    function show(todo) {
      items.set(todo.id, todo);
      render();
    }

    async function start() {
      const me = await hatch.me();
      if (!me) {
        const button = el("button", { textContent: "Sign in to keep a list" });
        button.onclick = () => hatch.signIn();
        $("who").append(button);
        return;
      }
      $("who").textContent = "Signed in as " + me.email;
      $("add").hidden = false;
      // Changes from other tabs and devices, from now on.
      todos.subscribe((change) => {
        if (change.type === "removed") items.delete(change.id);
        else items.set(change.id, change.document);
        render();
      }, showError);
      let after = null;
      do {
        const page = await todos.list({ limit: 100, after });
        for (const todo of page.documents) items.set(todo.id, todo);
        after = page.next;
      } while (after);
      render();
    }

    $("add").onsubmit = async (event) => {
      event.preventDefault();
      try {
        const file = $("photo").files[0];
        const photo = file ? (await photos.upload(file)).id : null;
        show(await todos.add({ text: $("text").value, done: false, photo }));
        $("add").reset();
      } catch (error) {
        showError(error);
      }
    };

    start().catch(showError);
  </script>
</body>
</html>`;

/** The example app's files: path → content. */
export const EXAMPLE_APP: Readonly<Record<"index.html" | "service.json", string>> = {
  "index.html": INDEX_HTML,
  "service.json": SERVICE_JSON,
};
