"""A generated, labelled corpus of user next states for training the ``classifier`` PRM mode.

Every example is one judged turn as the classifier reads it: the user's request, the assistant's
reply and the user's next message, with the verdict a careful person would give (``1`` the reply
was accepted, ``-1`` it was corrected or rejected, ``0`` the next message says nothing about it).
Examples are made from templates x slot values x languages x writing styles:

* **languages**: English, German, Spanish, French, Chinese (``en de es fr zh``);
* **verdict styles** (``style`` field): for ``-1`` explicit corrections, corrections with no
  negative word (a bare requirement "3 bullet points.", a stated fact "The confirmation says
  March 14.", "Close, but in TypeScript"), terse replies ("again.", "?", "wrong file"), sarcasm,
  negated praise, polite redo requests ("thanks, but shorter please"), mixed praise and
  correction, the request repeated, the user pasting their own fixed version; for ``1`` thanks,
  acceptance without praise (the user builds on the answer, reports it worked, also in the words of
  the error that is gone: "no more 404", "Plus de plantage"), emoji; for ``0``
  a new unrelated question, "brb", background notifications, a new file for a new task,
  questions about the answer;
* **surface noise** (deterministic, seeded): lower case, dropped final punctuation, one typo,
  an emoji, a filler word.

Templates are grouped in families (``family`` field, e.g. ``en:-1:fact:3``): the held-back slice
(:func:`split`) holds whole families out, so it measures wording the classifier never saw, not
the same sentence with another slot value. The corpus is fully determined by the code and
``seed``: :func:`generate` returns the same list on every machine.

Licence: the templates and slot values were written for this project and are released with it
under Apache-2.0 (``openclaw_rl/judges/data/LICENSE-feedback-corpus``).

    python -m openclaw_rl.judges.feedback_corpus --out corpus.jsonl   # write it as judge cases
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from dataclasses import dataclass

__all__ = ["CorpusExample", "generate", "split", "LANGUAGES", "corpus_fingerprint", "main"]

LANGUAGES = ("en", "de", "es", "fr", "zh")


@dataclass(frozen=True)
class CorpusExample:
    """One labelled next state: ``request``, ``response``, ``next_state`` (user role), ``label``
    (1 / -1 / 0), ``lang``, ``style`` and the template ``family`` it came from."""

    request: str
    response: str
    next_state: str
    label: int
    lang: str
    style: str
    family: str


# ------------------------------------------------------------------------------------------ slots
# Each slot maps a language to its values. A template names slots as {slot}.
_SLOTS: dict[str, dict[str, tuple[str, ...]]] = {
    "fix": {  # a requirement the reply missed, as the user would state it bare
        "en": ("3 bullet points", "in TypeScript", "under 100 words", "as a table", "in the past tense",
               "with type hints", "in metric units", "for Python 3.8", "without the intro", "in a single paragraph",
               "as JSON", "sorted by date", "in German", "with sources", "less formal"),
        "de": ("3 Stichpunkte", "in TypeScript", "unter 100 Wörtern", "als Tabelle", "ohne Einleitung",
               "auf Englisch", "mit Quellen", "in einem Absatz", "als JSON", "nach Datum sortiert"),
        "es": ("3 viñetas", "en TypeScript", "en menos de 100 palabras", "como tabla", "sin la introducción",
               "en inglés", "con fuentes", "en un solo párrafo", "en JSON", "ordenado por fecha"),
        "fr": ("3 puces", "en TypeScript", "en moins de 100 mots", "sous forme de tableau", "sans l'introduction",
               "en anglais", "avec des sources", "en un seul paragraphe", "en JSON", "trié par date"),
        "zh": ("三个要点", "用TypeScript", "一百字以内", "做成表格", "不要开头那段", "用英文", "附上来源",
               "一段话", "用JSON格式", "按日期排序"),
    },
    "doc": {
        "en": ("confirmation", "invoice", "ticket", "contract", "email", "receipt", "spec", "calendar", "docs"),
        "de": ("Bestätigung", "Rechnung", "Ticket", "E-Mail", "Quittung", "Doku"),
        "es": ("confirmación", "factura", "entrada", "correo", "recibo", "documentación"),
        "fr": ("confirmation", "facture", "billet", "mail", "reçu", "documentation"),
        "zh": ("确认邮件", "发票", "车票", "合同", "收据", "文档"),
    },
    "thing": {
        "en": ("the date", "the total", "the name", "the file", "the function", "the address", "the number",
               "the time", "the link", "the version"),
        "de": ("das Datum", "die Summe", "der Name", "die Datei", "die Funktion", "die Adresse", "die Zahl"),
        "es": ("la fecha", "el total", "el nombre", "el archivo", "la función", "la dirección", "el número"),
        "fr": ("la date", "le total", "le nom", "le fichier", "la fonction", "l'adresse", "le numéro"),
        "zh": ("日期", "总数", "名字", "文件", "函数", "地址", "数字"),
    },
    "next": {  # a follow-up that builds on the accepted answer
        "en": ("add a test for it", "make the same change in utils.py", "do the same for the other table",
               "write the docstring", "send it to Maria", "translate it to Spanish", "add error handling",
               "put it in the README", "schedule it for Friday", "commit it"),
        "de": ("schreib noch einen Test dafür", "mach das Gleiche für die andere Tabelle", "schick es an Maria",
               "füg es in die README ein", "übersetz es ins Englische"),
        "es": ("añade un test", "haz lo mismo con la otra tabla", "envíaselo a María", "ponlo en el README",
               "tradúcelo al inglés"),
        "fr": ("ajoute un test", "fais pareil pour l'autre tableau", "envoie-le à Marie", "mets-le dans le README",
               "traduis-le en anglais"),
        "zh": ("再加个测试", "另一个表也这样改", "发给小王", "放进README里", "翻译成英文"),
    },
    "feature": {  # something to add on top of an accepted answer
        "en": ("log to a file", "accept a list", "retry on timeout", "support dark mode", "export to PDF",
               "sort descending", "handle unicode", "run in parallel", "print a summary", "take a --verbose flag",
               "cache the results", "send an email when done", "show a progress bar", "read from stdin"),
        "de": ("in eine Datei loggen", "eine Liste annehmen", "nach Datum sortieren", "als PDF exportieren"),
        "es": ("guardar un log", "aceptar una lista", "ordenar por fecha", "exportar a PDF"),
        "fr": ("écrire un log", "accepter une liste", "trier par date", "exporter en PDF"),
        "zh": ("写日志", "支持列表输入", "按日期排序", "导出PDF"),
    },
    "bad": {  # what broke after the reply (sarcasm)
        "en": ("nothing loads", "it takes forever", "the page is blank", "everyone got the email", "my data is gone",
               "the tests hang", "the app crashes on start", "all the dates are wrong", "the CSV is empty",
               "it's exactly the same as before", "the backups are gone too", "it's a vegetarian menu with steak"),
        "de": ("jetzt geht gar nichts mehr", "meine Daten sind weg", "alles ist noch genauso", "die Seite ist leer",
               "die Sicherung ist auch weg", "es dauert ewig"),
        "es": ("ahora no funciona nada", "mis datos desaparecieron", "sigue todo igual", "la página está en blanco",
               "la copia de seguridad también se borró", "tarda una eternidad"),
        "fr": ("plus rien ne marche", "mes données ont disparu", "c'est toujours pareil", "la page est vide",
               "la sauvegarde a disparu aussi", "ça prend une éternité"),
        "zh": ("现在什么都用不了了", "我的数据全没了", "还是一模一样", "页面一片空白", "备份也没了", "慢得要死"),
    },
    "topic": {  # an unrelated new question
        "en": ("what's the capital of Peru", "how do I boil an egg", "any good podcasts on history",
               "what time zone is Tokyo in", "how many ounces in a cup", "who wrote Dune",
               "what's a good name for a cat", "how tall is Everest"),
        "de": ("wie spät ist es in Tokio", "was ist die Hauptstadt von Peru", "wie koche ich ein Ei",
               "wer hat Faust geschrieben"),
        "es": ("cuál es la capital de Perú", "cómo se hierve un huevo", "quién escribió Cien años de soledad",
               "qué hora es en Tokio"),
        "fr": ("quelle est la capitale du Pérou", "comment cuire un œuf", "qui a écrit Germinal",
               "quelle heure est-il à Tokyo"),
        "zh": ("秘鲁的首都是哪里", "鸡蛋要煮几分钟", "《三体》是谁写的", "东京现在几点"),
    },
    "error": {  # what no longer goes wrong, named in a success report
        "en": ("error", "warning", "404", "timeout", "crash", "KeyError", "deprecation warning", "segfault",
               "import error", "merge conflict", "memory spike", "flaky test", "CORS error", "login loop"),
        "de": ("Fehler", "Timeout", "404", "Absturz", "Warnhinweis", "Importfehler", "Speicherfehler"),
        "es": ("error", "404", "timeout", "aviso", "fallo", "cuelgue", "error de importación"),
        "fr": ("bug", "timeout", "404", "plantage", "message d'erreur", "avertissement", "crash"),
        "zh": ("报错", "超时", "404", "崩溃", "警告", "内存溢出", "导入错误"),
    },
    "task": {  # the next piece of work, named as a noun phrase
        "en": ("the English version", "section 2", "the summary", "the tests", "the cover letter", "the follow-up email",
               "the conclusion", "the slides", "the FAQ", "the second chapter", "the invoice for May", "the Spanish one"),
        "de": ("die englische Fassung", "den zweiten Abschnitt", "die Zusammenfassung", "die Tests", "das Anschreiben",
               "die Folien", "das Fazit"),
        "es": ("la versión en inglés", "la segunda sección", "el resumen", "los tests", "la carta", "las diapositivas",
               "la conclusión"),
        "fr": ("la version anglaise", "la deuxième partie", "le résumé", "les tests", "la lettre", "les diapos",
               "la conclusion"),
        "zh": ("英文版", "第二部分", "总结", "测试", "求职信", "幻灯片", "结论"),
    },
    "person": {"en": ("he", "she", "my boss", "the client", "Sam"), "de": ("er", "sie", "mein Chef", "der Kunde"),
               "es": ("él", "ella", "mi jefe", "el cliente"), "fr": ("il", "elle", "mon chef", "le client"),
               "zh": ("他", "她", "老板", "客户")},
    "month": {"en": ("March", "April", "June", "October"), "de": ("März", "April", "Juni", "Oktober"),
              "es": ("marzo", "abril", "junio", "octubre"), "fr": ("mars", "avril", "juin", "octobre"),
              "zh": ("3月", "4月", "6月", "10月")},
    "n": {lang: ("3", "7", "12", "14", "21", "42", "150", "2019") for lang in LANGUAGES},
    "file": {lang: ("config.yaml", "main.py", "report.docx", "index.ts", "notes.md", "data.csv") for lang in LANGUAGES},
}

# ------------------------------------------------------------------------------------- templates
# _T[lang][label][style] = templates. "{paste}" and "{repeat}" are filled from the turn itself.
_T: dict[str, dict[int, dict[str, tuple[str, ...]]]] = {
    "en": {
        -1: {
            "explicit": ("No, that's wrong.", "That's incorrect, {thing} is {n}.", "This is not what I asked for.",
                         "You got {thing} wrong.", "Nope, wrong answer.", "That is not right at all.",
                         "Incorrect. Please check again.", "You misunderstood me.", "That doesn't work, it crashes.",
                         "It still fails with the same error.", "That's the opposite of what I said.",
                         "You mixed up {thing}.", "Where did you get {n} from? It's wrong.", "It's {n}, not {n}.",
                         "Doesn't compile.", "That broke the build.", "Still the same bug.", "No. Read my question again.",
                         "You answered a different question.", "This crashes on empty input.", "Not even close."),
            "bare_requirement": ("{fix}.", "{fix} please.", "I need it {fix}.", "{fix}, like I said.",
                                 "Should be {fix}.", "Needs to be {fix}.", "{fix}!", "Only {fix}.", "{fix}, as requested.",
                                 "Remember: {fix}.", "The brief said {fix}.", "{n} items max.", "Max {n} words.",
                                 "Shorter.", "Simpler.", "In English.", "Plain text only.", "Just the code."),
            "fact": ("The {doc} says {month} {n}.", "It's {month} {n} on the {doc}.", "Actually the {doc} shows {n}.",
                     "Per the {doc} it's {n}.", "My {doc} has {month} {n} on it.", "{thing} is {n} actually.",
                     "The {doc} has {n} though.", "According to the {doc}, {month} {n}.", "I checked: {n}.",
                     "Pretty sure it's {n}.", "The {doc} lists {month} {n}, I'm looking at it.", "It was {n}. I was there.",
                     "That's last year's number, it's {n} now."),
            "close_but": ("Close, but I needed it {fix}.", "Almost, just {fix}.", "Nearly there, but {fix}.",
                          "Good start, but I wanted it {fix}.", "Not bad but it has to be {fix}.", "Closer. Now {fix}.",
                          "Right direction, but {fix}.", "Almost there - {fix} though.", "Better, but still not {fix}."),
            "terse": ("again.", "?", "wrong file", "no", "nope", "huh?", "??", "wrong one", "not that",
                      "still broken", "try again", "redo", "other way round", "that's the old version", "wrong {thing}",
                      "nah", "again", "still no", "same error", "wrong", "not {n}", "the other {thing}", "meh",
                      "no.", "what?", "again??", "still", "incorrect", "older one", "the new one"),
            "sarcasm": ("Wow, great, now nothing works.", "Oh brilliant, you deleted my notes.",
                        "Sure, because that's what I asked for.", "Thanks for nothing.",
                        "Great job breaking the build again.", "Yeah right, that totally answers my question.",
                        "Amazing, another made-up number.", "Oh perfect, now it's in Klingon.",
                        "Wonderful, you renamed the wrong file.", "Nice, so now the tests don't even start.",
                        "Cool story, but I asked about {thing}.", "Great, exactly the opposite. Fantastic.",
                        "Impressive. Wrong, but impressive.", "Lovely, it crashes faster now."),
            "negated_praise": ("Not quite what I meant.", "Not exactly helpful.", "Not really what I was after.",
                               "That's not great.", "I wouldn't call that correct.", "Not what I had in mind.",
                               "Not very useful.", "Not quite.", "Not ideal.", "Not what I'd hoped.",
                               "Doesn't really help.", "Not the right tone.", "Hardly what I asked.", "Not good enough."),
            "polite_redo": ("Thanks, but shorter please.", "Thanks, but can you make it {fix}?",
                            "Appreciate it, but could you redo it {fix}?", "Thank you! Could you do it {fix} though?",
                            "Great, but I need it {fix}.", "Nice, but please {fix}.",
                            "Cheers, but could you try a simpler version?", "Thanks! One more pass {fix}?",
                            "Lovely, could you rewrite it {fix}?", "Thanks - can you trim it down?",
                            "Good effort, but please do it again {fix}.", "Perfect except it should be {fix}.",
                            "Thanks, though I'd prefer it {fix}.", "ty, but can we have it {fix}"),
            "mixed": ("The first part is fine but {thing} is off.", "Good structure, but the numbers are wrong.",
                      "I like the tone, but it's missing {thing}.", "Half of it works; the second function throws.",
                      "Looks good except {thing} is wrong.", "The code runs but the output is wrong.",
                      "Nice formatting, wrong content.", "Works for small inputs, times out on big ones.",
                      "Good, except you dropped {thing}.", "Solid, but {thing} should be {n}."),
            "paste": ("Here's what I meant:\n{paste}", "I fixed it myself:\n{paste}", "This is the correct version:\n{paste}",
                      "Should be:\n{paste}", "Use this instead:\n{paste}", "Nvm, did it:\n{paste}"),
            "repeat": ("{repeat}", "{repeat}?", "I'll ask again: {repeat}", "Again: {repeat}", "Once more: {repeat}",
                       "My question was: {repeat}", "{repeat}. Please."),
        },
        1: {
            "thanks": ("Thanks, that's exactly it.", "Perfect, thank you!", "Great, that works.",
                       "Thank you so much!", "Awesome, thanks!", "That's what I needed, thanks.",
                       "Exactly right, cheers.", "Lovely, thanks a lot.", "Much appreciated.", "You're a lifesaver.",
                       "Brilliant, cheers!", "Super helpful, thanks.", "This is great.", "Nailed it.",
                       "thx!", "Thanks, really clear."),
            "builds_on": ("ok now {next}.", "Now {next}.", "Good. Next, {next}.", "Cool, and {next}?",
                          "Alright, {next}.", "Makes sense. Can you {next}?", "k, {next} too",
                          "Nice. While you're at it, {next}.", "Next step: {next}.", "Then {next}.",
                          "Good, {next} as well.", "Great, now let's {next}.", "Ok, {next} next.",
                          "And {next}.", "Same for the other {n} files.", "Do that for all {n} of them."),
            "worked": ("ran it, all tests pass", "sent it, {person} said no problem", "works now",
                       "deployed, no issues", "that fixed it", "compiled fine", "{person} approved it",
                       "it ran without errors", "tested it, all good", "merged", "booked, got the confirmation",
                       "the script finished in {n} seconds, nice", "yep that did it", "builds green now",
                       "the page loads again", "{person} loved it", "submitted, got a {n} out of {n}",
                       "installed fine", "CI passed", "printed it, looks right", "it's live now",
                       "all {n} rows imported", "posted it", "solved, closing the ticket", "no more errors"),
            "agree": ("yes, that's right", "correct", "yep", "exactly", "100%", "that's the one", "spot on",
                      "sounds good", "ok great", "agreed", "right", "true", "fair enough, doing that",
                      "yes", "good call", "makes sense", "that's it", "indeed", "yup, go with that"),
            "emoji": ("👍", "🙏 thanks", "🔥🔥", "perfect 👌", "✅", "🎉 it works", "💯", "🙌", "❤️ thanks", "😀 works"),
        },
        0: {
            "new_topic": ("Unrelated, but {topic}?", "Different question: {topic}?", "{topic}?", "By the way, {topic}?",
                          "Quick one: {topic}?", "Random q: {topic}?", "Switching topics - {topic}?",
                          "Also unrelated: {topic}?", "Totally different thing: {topic}?", "Oh and {topic}?"),
            "away": ("brb", "one sec", "give me a minute", "back in 5", "gotta run, talk later", "afk",
                     "hold on, someone's at the door", "let me check with my team", "phone call, back soon",
                     "stepping out for {n} minutes", "meeting now, later", "will read this tonight",
                     "let me try it tomorrow", "hang on"),
            "notification": ("[Reminder] Standup in {n} minutes", "New email from {person}: Lunch?",
                             "Calendar: Dentist at 3pm", "[Slack] #general: build finished", "Battery low ({n}%)",
                             "Your package has been delivered", "[Jira] {person} commented on TICKET-{n}",
                             "Missed call from {person}", "System update available", "{n} new messages",
                             "[Calendar] Event moved to {month} {n}", "Download complete: {file}"),
            "new_file": ("Here's another file for a new task: {file}", "Attached {file}. Different thing: summarise it.",
                         "New task. Here is {file}.", "Can you look at {file}? Separate issue.",
                         "Next file: {file}. Translate it."),
            "ambiguous": ("hmm", "ok", "I see", "interesting", "why?", "how does that work?", "let me think about it",
                          "what do you mean by {thing}?", "and then?", "huh, ok", "what's the source for that?",
                          "how did you get {n}?", "hm, is that always true?", "can you explain the second step?",
                          "what does {thing} do here?", "so what's the catch?", "wait, really?"),
        },
    },
    "de": {
        -1: {
            "explicit": ("Nein, das ist falsch.", "Das stimmt nicht, {thing} ist {n}.", "Das habe ich nicht gefragt.",
                         "Du hast {thing} falsch.", "Funktioniert nicht, es stürzt ab.", "Immer noch derselbe Fehler.",
                         "Falsch, bitte nochmal prüfen.", "Du hast mich falsch verstanden.", "Das ist genau verkehrt herum.",
                         "Kompiliert nicht.", "Das beantwortet meine Frage nicht.", "Leider falsch."),
            "bare_requirement": ("{fix}.", "{fix} bitte.", "Ich brauche es {fix}.", "Sollte {fix} sein.", "Kürzer.",
                                 "Nur {fix}.", "Wie gesagt: {fix}.", "Höchstens {n} Wörter.", "Bitte {fix}."),
            "fact": ("Laut {doc} ist es der {n}. {month}.", "Auf der {doc} steht {n}.", "{thing} ist eigentlich {n}.",
                     "In der {doc} steht {month}.", "Ich hab nachgeschaut: {n}."),
            "close_but": ("Fast, aber {fix}.", "Nah dran, aber ich brauche es {fix}.", "Besser, aber noch nicht {fix}.",
                          "Guter Anfang, aber {fix}."),
            "terse": ("nochmal.", "?", "falsche Datei", "nein", "nö", "falsch", "geht immer noch nicht", "nee",
                      "immer noch falsch", "die andere", "nochmal bitte", "hä?", "stimmt nicht"),
            "sarcasm": ("Toll, jetzt geht gar nichts mehr.", "Super, genau das wollte ich. Nicht.",
                        "Na großartig, jetzt ist alles kaputt.", "Klasse, wieder eine erfundene Zahl."),
            "negated_praise": ("Nicht ganz, was ich meinte.", "Nicht wirklich hilfreich.", "Das ist nicht so gut.",
                               "Nicht ganz richtig.", "Nicht das, was ich wollte.", "Überzeugt mich nicht."),
            "polite_redo": ("Danke, aber bitte kürzer.", "Danke, aber kannst du es {fix} machen?",
                            "Danke! Könntest du es noch {fix} schreiben?", "Nett, aber bitte nochmal {fix}.",
                            "Danke, aber etwas lockerer bitte.", "Schön, aber bitte {fix}."),
            "mixed": ("Der erste Teil passt, aber {thing} stimmt nicht.", "Gute Struktur, aber die Zahlen sind falsch.",
                      "Läuft, aber das Ergebnis ist falsch.", "Gut, nur {thing} fehlt."),
            "paste": ("So war es gemeint:\n{paste}", "Ich habe es selbst korrigiert:\n{paste}", "Richtig wäre:\n{paste}"),
            "repeat": ("{repeat}", "Nochmal: {repeat}", "Meine Frage war: {repeat}"),
        },
        1: {
            "thanks": ("Danke, genau das!", "Perfekt, vielen Dank!", "Super, das passt.", "Danke dir!",
                       "Klasse, danke!", "Sehr hilfreich, danke.", "Top, genau so.", "Vielen Dank, das hilft mir sehr."),
            "builds_on": ("Gut, jetzt {next}.", "Ok, und {next}.", "Passt. Als Nächstes {next}.", "Dann {next}.",
                          "Prima. Jetzt noch {next}.", "Alles klar, {next}."),
            "worked": ("Läuft, alle Tests grün.", "Hab's geschickt, {person} sagt kein Problem.", "Funktioniert jetzt.",
                       "Hat geklappt.", "Kompiliert ohne Fehler.", "Ist online.", "{person} hat zugestimmt.",
                       "Installiert, läuft.", "Keine Fehler mehr."),
            "agree": ("Ja, stimmt.", "Richtig.", "Genau.", "Passt so.", "Ja, so machen wir das.", "Einverstanden."),
            "emoji": ("👍 danke", "✅ läuft", "🙏", "super 👌"),
        },
        0: {
            "new_topic": ("Andere Frage: {topic}?", "Übrigens, {topic}?", "{topic}?", "Ganz was anderes: {topic}?"),
            "away": ("bin gleich zurück", "Moment bitte", "muss kurz weg", "kurz telefonieren, dann weiter",
                     "ich melde mich später"),
            "notification": ("Erinnerung: Meeting in {n} Minuten", "Neue Nachricht von {person}", "Akku schwach",
                             "Paket wurde zugestellt"),
            "new_file": ("Neue Aufgabe, hier ist {file}.", "Noch eine Datei: {file}, bitte zusammenfassen."),
            "ambiguous": ("hmm", "aha", "warum?", "wie meinst du das?", "ok", "interessant", "und dann?"),
        },
    },
    "es": {
        -1: {
            "explicit": ("No, eso está mal.", "Eso no es correcto, {thing} es {n}.", "No es lo que pedí.",
                         "Te equivocaste con {thing}.", "No funciona, se cae.", "Sigue dando el mismo error.",
                         "Incorrecto, revísalo.", "Me entendiste mal.", "Está al revés.", "No compila.",
                         "Eso no responde a mi pregunta.", "Error, no es así."),
            "bare_requirement": ("{fix}.", "{fix}, por favor.", "Lo necesito {fix}.", "Debería ser {fix}.", "Más corto.",
                                 "Solo {fix}.", "Como dije, {fix}.", "Máximo {n} palabras."),
            "fact": ("La {doc} dice {n} de {month}.", "En la {doc} pone {n}.", "{thing} es {n} en realidad.",
                     "Lo comprobé: {n}.", "Según la {doc}, es el {n}."),
            "close_but": ("Casi, pero {fix}.", "Cerca, pero lo necesito {fix}.", "Mejor, pero todavía no {fix}.",
                          "Buen intento, pero {fix}."),
            "terse": ("otra vez.", "?", "archivo equivocado", "no", "mal", "sigue sin funcionar", "nop",
                      "sigue mal", "el otro", "de nuevo", "¿qué?", "incorrecto"),
            "sarcasm": ("Genial, ahora nada funciona.", "Perfecto, justo lo que no pedí.",
                        "Qué bien, ahora está todo roto.", "Fantástico, otro número inventado."),
            "negated_praise": ("No es exactamente lo que quería.", "No muy útil.", "No del todo.", "No me sirve.",
                               "No es lo que buscaba.", "No está bien."),
            "polite_redo": ("Gracias, pero más corto por favor.", "Gracias, ¿pero puedes hacerlo {fix}?",
                            "¡Gracias! ¿Podrías rehacerlo {fix}?", "Bien, pero hazlo de nuevo {fix}.",
                            "Gracias, aunque lo prefiero {fix}.", "Está bien, pero más sencillo, por favor."),
            "mixed": ("La primera parte está bien, pero {thing} no.", "Buena estructura, pero los números están mal.",
                      "Funciona, pero el resultado es incorrecto.", "Bien, solo falta {thing}."),
            "paste": ("Esto es lo que quería:\n{paste}", "Lo arreglé yo:\n{paste}", "Debería ser:\n{paste}"),
            "repeat": ("{repeat}", "Otra vez: {repeat}", "Mi pregunta era: {repeat}"),
        },
        1: {
            "thanks": ("¡Gracias, justo eso!", "Perfecto, ¡muchas gracias!", "Genial, funciona.", "¡Mil gracias!",
                       "Muy útil, gracias.", "Excelente, gracias.", "¡Buenísimo!", "Gracias, me sirve mucho."),
            "builds_on": ("Bien, ahora {next}.", "Vale, y {next}.", "Ok. Ahora {next}.", "Luego {next}.",
                          "Perfecto, ahora {next}.", "Listo, {next}."),
            "worked": ("Lo ejecuté, pasan todos los tests.", "Lo envié, {person} dijo que no hay problema.",
                       "Ya funciona.", "Funcionó.", "Compila sin errores.", "Ya está en producción.",
                       "{person} lo aprobó.", "Instalado y funcionando.", "Ya no da errores."),
            "agree": ("Sí, correcto.", "Exacto.", "Eso es.", "De acuerdo.", "Sí, así lo hacemos."),
            "emoji": ("👍 gracias", "✅ funciona", "🙏", "genial 👌"),
        },
        0: {
            "new_topic": ("Otra pregunta: ¿{topic}?", "Por cierto, ¿{topic}?", "¿{topic}?", "Cambiando de tema, ¿{topic}?"),
            "away": ("ahora vuelvo", "un momento", "me tengo que ir un rato", "luego sigo", "tengo una llamada"),
            "notification": ("Recordatorio: reunión en {n} minutos", "Nuevo mensaje de {person}", "Batería baja",
                             "Tu paquete ha sido entregado"),
            "new_file": ("Nueva tarea, aquí está {file}.", "Otro archivo: {file}, resúmelo."),
            "ambiguous": ("mmm", "vale", "¿por qué?", "¿qué quieres decir?", "ya veo", "interesante", "¿y luego?"),
        },
    },
    "fr": {
        -1: {
            "explicit": ("Non, c'est faux.", "Ce n'est pas correct, {thing} est {n}.", "Ce n'est pas ce que j'ai demandé.",
                         "Tu t'es trompé sur {thing}.", "Ça ne marche pas, ça plante.", "Toujours la même erreur.",
                         "Faux, vérifie encore.", "Tu m'as mal compris.", "C'est à l'envers.", "Ça ne compile pas.",
                         "Ça ne répond pas à ma question.", "Erreur, ce n'est pas ça."),
            "bare_requirement": ("{fix}.", "{fix}, s'il te plaît.", "Il me le faut {fix}.", "Ça devrait être {fix}.",
                                 "Plus court.", "Seulement {fix}.", "Comme je disais, {fix}.", "{n} mots maximum."),
            "fact": ("La {doc} indique le {n} {month}.", "Sur la {doc} c'est {n}.", "{thing} est {n} en fait.",
                     "J'ai vérifié : {n}.", "D'après la {doc}, c'est le {n}."),
            "close_but": ("Presque, mais {fix}.", "Pas loin, mais il me le faut {fix}.", "Mieux, mais pas encore {fix}.",
                          "Bon début, mais {fix}."),
            "terse": ("encore.", "?", "mauvais fichier", "non", "faux", "ça ne marche toujours pas", "nan",
                      "toujours faux", "l'autre", "refais", "quoi ?", "incorrect"),
            "sarcasm": ("Génial, plus rien ne marche.", "Bravo, exactement ce que je n'ai pas demandé.",
                        "Super, maintenant tout est cassé.", "Formidable, encore un chiffre inventé."),
            "negated_praise": ("Pas tout à fait ce que je voulais.", "Pas très utile.", "Pas vraiment ça.",
                               "Ça ne me convient pas.", "Pas ce que je cherchais.", "Ce n'est pas terrible."),
            "polite_redo": ("Merci, mais plus court s'il te plaît.", "Merci, mais tu peux le faire {fix} ?",
                            "Merci ! Tu pourrais le refaire {fix} ?", "Bien, mais refais-le {fix}.",
                            "Merci, mais je le préfère {fix}.", "D'accord, mais plus simple s'il te plaît."),
            "mixed": ("La première partie va, mais {thing} est faux.", "Bonne structure, mais les chiffres sont faux.",
                      "Ça tourne, mais le résultat est faux.", "Bien, il manque juste {thing}."),
            "paste": ("Voilà ce que je voulais :\n{paste}", "Je l'ai corrigé moi-même :\n{paste}", "Ça devrait être :\n{paste}"),
            "repeat": ("{repeat}", "Encore une fois : {repeat}", "Ma question était : {repeat}"),
        },
        1: {
            "thanks": ("Merci, c'est exactement ça !", "Parfait, merci beaucoup !", "Super, ça marche.", "Merci !",
                       "Très utile, merci.", "Excellent, merci.", "Génial !", "Merci, ça m'aide beaucoup."),
            "builds_on": ("Bien, maintenant {next}.", "Ok, et {next}.", "Ensuite, {next}.", "Parfait, maintenant {next}.",
                          "D'accord, {next}.", "Et puis {next}."),
            "worked": ("Je l'ai lancé, tous les tests passent.", "Envoyé, {person} a dit pas de problème.",
                       "Ça marche maintenant.", "Ça a marché.", "Ça compile sans erreur.", "C'est en ligne.",
                       "{person} a validé.", "Installé, ça tourne.", "Plus d'erreurs."),
            "agree": ("Oui, c'est ça.", "Exact.", "Tout à fait.", "D'accord.", "Oui, on fait comme ça."),
            "emoji": ("👍 merci", "✅ ça marche", "🙏", "top 👌"),
        },
        0: {
            "new_topic": ("Autre question : {topic} ?", "Au fait, {topic} ?", "{topic} ?", "Sans rapport : {topic} ?"),
            "away": ("je reviens", "une seconde", "je dois m'absenter", "je suis au téléphone, à plus",
                     "je regarde ça plus tard"),
            "notification": ("Rappel : réunion dans {n} minutes", "Nouveau message de {person}", "Batterie faible",
                             "Votre colis a été livré"),
            "new_file": ("Nouvelle tâche, voici {file}.", "Autre fichier : {file}, résume-le."),
            "ambiguous": ("hmm", "d'accord", "pourquoi ?", "c'est-à-dire ?", "je vois", "intéressant", "et ensuite ?"),
        },
    },
    "zh": {
        -1: {
            "explicit": ("不对，错了。", "不对，{thing}是{n}。", "这不是我要的。", "你把{thing}弄错了。",
                         "跑不起来，报错了。", "还是同样的错误。", "错了，再检查一下。", "你理解错了。", "正好反了。",
                         "编译不过。", "没回答我的问题。", "不是这样的。"),
            "bare_requirement": ("{fix}。", "要{fix}。", "请{fix}。", "短一点。", "只要{fix}。", "我说了{fix}。",
                                 "最多{n}个字。"),
            "fact": ("{doc}上写的是{month}{n}日。", "{doc}上是{n}。", "{thing}其实是{n}。", "我查了，是{n}。",
                     "按{doc}来看是{n}号。"),
            "close_but": ("差不多，但是要{fix}。", "接近了，不过我需要{fix}。", "好一些了，但还不是{fix}。",
                          "开头不错，但要{fix}。"),
            "terse": ("再来。", "？", "文件不对", "不是", "错", "还是不行", "不对", "还是错的", "另一个", "重来",
                      "啥？", "错了"),
            "sarcasm": ("太好了，现在全坏了。", "真棒，完全不是我要的。", "厉害，又编了一个数字。", "好极了，现在更糟了。"),
            "negated_praise": ("不太是我想要的。", "没什么用。", "不太对。", "不太满意。", "不是我要找的。", "不怎么样。"),
            "polite_redo": ("谢谢，不过请短一点。", "谢谢，但能不能{fix}？", "谢谢！可以重新做一下吗，{fix}。",
                            "不错，但请再做一次，{fix}。", "谢谢，不过我更想要{fix}。", "好的，但请简单一点。"),
            "mixed": ("前半部分没问题，但是{thing}不对。", "结构不错，但数字错了。", "能运行，但结果不对。", "还行，就是少了{thing}。"),
            "paste": ("我要的是这样：\n{paste}", "我自己改好了：\n{paste}", "应该是：\n{paste}"),
            "repeat": ("{repeat}", "我再问一遍：{repeat}", "我的问题是：{repeat}"),
        },
        1: {
            "thanks": ("谢谢，就是这个！", "完美，非常感谢！", "太好了，可以用。", "谢谢！", "很有用，谢谢。",
                       "非常好，谢谢。", "太棒了！", "谢谢，帮大忙了。"),
            "builds_on": ("好，现在{next}。", "行，再{next}。", "可以。接下来{next}。", "然后{next}。", "好的，{next}。"),
            "worked": ("跑过了，测试全部通过。", "发过去了，{person}说没问题。", "现在能用了。", "成功了。", "编译通过。",
                       "已经上线了。", "{person}批准了。", "装好了，能跑。", "没有报错了。"),
            "agree": ("对，没错。", "正确。", "就是这样。", "同意。", "对，就这么办。"),
            "emoji": ("👍 谢谢", "✅ 可以了", "🙏", "好 👌"),
        },
        0: {
            "new_topic": ("换个问题：{topic}？", "顺便问一下，{topic}？", "{topic}？", "另外，{topic}？"),
            "away": ("马上回来", "等一下", "我先离开一会儿", "接个电话", "晚点再看"),
            "notification": ("提醒：{n}分钟后开会", "来自{person}的新消息", "电量不足", "您的快递已送达"),
            "new_file": ("新任务，这是{file}。", "另一个文件：{file}，总结一下。"),
            "ambiguous": ("嗯", "好吧", "为什么？", "什么意思？", "我看看", "有意思", "然后呢？"),
        },
    },
}

#: more templates, merged into :data:`_T` by style
_MORE_SLOTS: dict[str, dict[int, dict[str, tuple[str, ...]]]] = {
    "en": {
        1: {"builds_on": ("Now make it {feature}.", "Can it also {feature}?", "Also, {feature}?", "Add a way to {feature} too.",
                          "ok, next let it {feature}", "Then have it {feature}.", "How would I make it {feature}?",
                          "Good, and can we {feature} as well?", "cool. now {feature}", "Next step, {feature}.",
                          "works. can you extend it to {feature}?", "Ok and what if I want it to {feature}?",
                          "Great base. Let's {feature} next."),
            "worked": ("forwarded it, {person} replied all good", "{person} signed off on it", "tried it: works",
                       "did that, problem gone", "that unblocked me", "ran the migration, all {n} tables fine",
                       "it printed the right total", "{person} said it's exactly what they needed", "passed CI on the first try"),
            "thanks": ("Thanks, no problem at all.", "no worries, that's great, thanks", "not bad at all, thanks!",
                       "Nothing wrong with that, thanks.", "Couldn't be better.")},
        -1: {"polite_redo": ("Now make it shorter.", "Make it friendlier.", "Make it less wordy, please.",
                             "Can you make it more formal?", "Keep it to {n} lines.", "Cut it to {n} words."),
             "explicit": ("It doesn't {feature} though.", "You forgot to {feature}.", "I asked for it to {feature}.",
                          "It was supposed to {feature}.", "The second step is wrong.", "Why did you remove {thing}?"),
             "terse": ("but it doesn't {feature}", "{thing}??", "not {thing}", "no, {thing}")},
        0: {"ambiguous": ("Could it {feature} in principle?", "Is it hard to {feature}?", "Does it {feature}?",
                          "How long would it take to {feature}?"),
            "away": ("ok brb, meeting", "Will test it after lunch.", "Let me run it later and get back to you.",
                     "I'll look at this tomorrow."),
            "notification": ("[PagerDuty] Incident #{n} resolved", "{person} joined the channel", "Screen time: {n} min today")},
    },
    "de": {1: {"builds_on": ("Jetzt soll es noch {feature}.", "Kann es auch {feature}?")}},
    "es": {1: {"builds_on": ("Ahora que pueda {feature}.", "¿Puede también {feature}?")}},
    "fr": {1: {"builds_on": ("Maintenant il faut qu'il puisse {feature}.", "Il peut aussi {feature} ?")}},
    "zh": {1: {"builds_on": ("现在让它{feature}。", "还能{feature}吗？")}},
}

#: success reports worded with what no longer fails, sarcasm that thanks, follow-ups that name the
#: next piece of work: in every language
_MORE_TURNS: dict[str, dict[int, dict[str, tuple[str, ...]]]] = {
    "en": {1: {"worked": ("the {error} is gone", "no more {error}", "haven't seen the {error} since, cheers",
                          "not a single {error} since the change", "that fixed the {error}, nothing failed this time",
                          "zero {error}s in {n} runs now", "it didn't crash once", "it no longer times out",
                          "not an issue anymore, {person} says it works", "went through with no {error}",
                          "nothing broke this time", "no {error} after the restart either"),
               "builds_on": ("Now {task}, please.", "Good. Now write {task}.", "Next: {task}.", "Sent. Now {task}.",
                             "Done. Let's do {task} next.", "Ok, {task} now.", "Great, on to {task}.")},
           -1: {"sarcasm": ("Great, {bad}. Thanks so much.", "Wow, {bad}. Super helpful, thanks.",
                            "Perfect, {bad}. Really appreciate it.", "{bad}. Nailed it.",
                            "Oh nice, {bad}. Exactly what I asked for.", "Brilliant advice, {bad}. Cheers.")}},
    "de": {1: {"worked": ("der {error} ist weg", "kein {error} mehr", "seitdem kein einziger {error}",
                          "nichts mehr abgestürzt", "läuft ohne {error}", "der {error} kommt nicht mehr"),
               "builds_on": ("Super. Jetzt bitte noch {task}.", "Sehr gut. Als Nächstes {task}, bitte.",
                             "Erledigt. Jetzt {task}.", "Gut, dann {task}.")},
           -1: {"sarcasm": ("Super, {bad}. Danke auch.", "Na toll, {bad}. Sehr hilfreich, danke.",
                            "Klasse, {bad}. Vielen Dank.", "Wunderbar, {bad}. Genau so wollte ich das.")}},
    "es": {1: {"worked": ("ya no sale el {error}", "el {error} desapareció", "ni un {error} desde el cambio",
                          "no ha vuelto a fallar", "sin {error}, todo bien", "se acabó el {error}"),
               "builds_on": ("Perfecto. Ahora {task}, por favor.", "Listo. Ahora {task}.", "Bien, sigamos con {task}.",
                             "Hecho. Lo siguiente: {task}.")},
           -1: {"sarcasm": ("Genial, {bad}. Gracias, eh.", "Perfecto, {bad}. Muy útil.",
                            "Qué bien, {bad}. Muchas gracias.", "Estupendo, {bad}. Justo lo que pedí.")}},
    "fr": {1: {"worked": ("plus de {error}", "le {error} a disparu", "aucun {error} depuis", "ça ne plante plus",
                          "pas un seul {error} depuis le changement", "fini le {error}"),
               "builds_on": ("Très bien. Maintenant {task}.", "Parfait. Ensuite {task}, s'il te plaît.",
                             "C'est envoyé. Maintenant {task}.", "Bon, passons à {task}.")},
           -1: {"sarcasm": ("Génial, {bad}. Merci bien.", "Bravo, {bad}. Super utile.", "Parfait, {bad}. Merci hein.",
                            "Formidable, {bad}. Exactement ce que je voulais.")}},
    "zh": {1: {"worked": ("{error}没有了", "再也没有{error}", "一次{error}都没出现", "不再{error}了", "{error}解决了，没再出现"),
               "builds_on": ("很好。现在写{task}。", "好了。接下来做{task}吧。", "发了。下一步{task}。", "行，那就{task}。")},
           -1: {"sarcasm": ("太好了，{bad}，谢谢啊。", "真棒，{bad}。多谢。", "厉害，{bad}，真有用。", "好极了，{bad}，正是我要的。")}},
}

#: more plain sentences (no slots), merged into :data:`_T` by style
_MORE: dict[str, dict[int, dict[str, tuple[str, ...]]]] = {
"en": {
 -1: {
  "explicit": ("That's not how it works.", "This is completely off.", "You've got it backwards.", "That answer is outdated.",
               "The link you gave is dead.", "None of those exist.", "You made that up.", "That's a different library.",
               "The numbers don't add up.", "You skipped the step I asked about.", "That won't even run.",
               "It throws a KeyError now.", "Still getting a 500.", "Nothing changed.", "You changed the wrong line.",
               "That's the wrong customer.", "The dates are all shifted by one day.", "Those aren't in alphabetical order.",
               "You ignored my constraint.", "The math is off by a factor of ten.", "I never said that.",
               "The total should be higher.", "Not the right answer.", "Bad answer.", "Way off.",
               "You're confusing it with Java.", "This is for Windows, I'm on a Mac.", "That's the deprecated API.",
               "The output is empty.", "It prints nothing.", "Same problem as before.", "No luck, same result.",
               "That's the staging server, not prod.", "This deletes everything, don't."),
  "bare_requirement": ("Python, please.", "In French.", "One sentence.", "Metric.", "Keep the original title.",
                       "No emojis.", "Formal tone.", "Just the numbers.", "With comments.", "Without the code.",
                       "Alphabetical.", "Bigger font.", "Newest first.", "Two decimal places.", "Use tabs.",
                       "Lowercase.", "For beginners.", "As a checklist.", "In a code block.", "US spelling."),
  "fact": ("My flight is at 6, not 8.", "We moved the meeting to Thursday.", "The office is on 5th Avenue.",
           "The repo is on GitLab, not GitHub.", "Her name is spelled Ann, no e.", "The budget was cut to 50k.",
           "It's version 3.11 on our servers.", "The deadline is the 30th.", "We use Postgres here.",
           "The client is in Berlin.", "It ended in 1945.", "The receipt shows 23.50.", "My order number ends in 77."),
  "terse": ("wrong again", "nope.", "nah, again", "not it", "no no no", "still wrong", "not working", "same",
            "fail", "broken", "wut", "no?", "...", "that's not it", "try harder", "other one", "not this file",
            "again please", "redo pls", "backwards"),
  "sarcasm": ("Oh good, now there are two bugs.", "Fantastic, it deleted the wrong rows.",
              "Right, because Paris is in Spain.", "Sure, let's just skip the tests, what could go wrong.",
              "Great answer if I'd asked something else.", "Brilliant. It's worse now.", "Wow. Just wow.",
              "Oh yes, very helpful, thanks a bunch.", "Love it when the fix breaks three other things.",
              "Perfect, if you ignore that it doesn't compile."),
  "negated_praise": ("Not helpful.", "Not quite there.", "Not what I wanted.", "Not the answer I need.",
                     "Not correct.", "Doesn't look right.", "Not convinced.", "Not useful for me.",
                     "I don't think that's right.", "That doesn't seem right.", "Not accurate.", "Not really."),
  "polite_redo": ("Thanks, could you try once more?", "Could you make it a bit shorter please?",
                  "Would you mind redoing it in a friendlier tone?", "Thank you, but please use simpler words.",
                  "Kind of you, but can it be more concise?", "Could you rephrase that?",
                  "Can you give it another go?", "Mind shortening it?", "Could you make it less formal?",
                  "Thanks! Can you cut it in half?", "Please try again with fewer words.",
                  "Could you do a version without jargon?"),
  "mixed": ("First two are right, the third is wrong.", "The intro works, the conclusion doesn't.",
            "Mostly fine but you forgot the edge case.", "Good list but two of them are closed now.",
            "Right formula, wrong result.", "Nice, but it breaks on Safari.", "Compiles now, but the output is wrong.",
            "Looks nice, but the links are broken."),
 },
 1: {
  "thanks": ("Thanks a ton!", "Cheers, that's it.", "That's perfect.", "Exactly what I was looking for.",
             "Fantastic, thank you.", "Great answer.", "Superb.", "You rock.", "That's really helpful.",
             "Thanks, that clears it up.", "Bang on, thanks.", "Wonderful.", "Great stuff.", "Very nice, thanks!",
             "That's excellent.", "Love it!", "This is exactly right.", "Just what I needed."),
  "builds_on": ("Now do the same for March.", "Next: write the tests.", "Cool. How do I deploy it?",
                "Ok, can you also add logging?", "Good, let's move on to the second chapter.",
                "Alright, now the French version.", "Now make a chart of it.", "Ok next question.",
                "Let's do the next one.", "Next, the invoices for May.", "Now email it to the team.",
                "Perfect. Now the summary slide.", "And now for the backend."),
  "worked": ("It works!", "Worked first try.", "All green.", "Tests pass now.", "Build succeeded.",
             "Problem solved.", "That sorted it.", "Fixed, thanks.", "Runs fine now.", "Uploaded successfully.",
             "The client signed.", "She accepted the offer.", "Got the refund.", "Site's back up.",
             "The query returns the right rows now.", "Printed and signed.", "Migrated without issues.",
             "The app starts now.", "Deployed to prod.", "I sent it off.", "It went through.",
             "He replied, all sorted.", "No complaints from QA.", "Passed review."),
  "agree": ("Yes exactly.", "Right, that's it.", "Correct, thanks.", "Sure, go ahead.", "Yep, do it.",
            "Yes, let's go with that.", "Good point.", "True, good catch.", "Absolutely.", "Sounds right.",
            "Okay, I'll use that.", "That works for me."),
  "emoji": ("👌", "🙏🙏", "✅✅", "🚀", "🥳", "😊 thanks", "👍👍", "nice 👍"),
 },
 0: {
  "new_topic": ("What's the weather tomorrow?", "How do I make pancakes?", "Can you recommend a book?",
                "What's the exchange rate for yen?", "Who won the match last night?", "How far is the moon?",
                "Tell me a joke.", "What's a synonym for happy?", "How do plants make oxygen?",
                "Where should I go on holiday in May?", "What's the population of Canada?"),
  "away": ("back later", "gotta go", "ttyl", "busy now, will check later", "on a call", "one moment",
           "give me a sec", "afk 10", "going to lunch", "let me get back to you"),
  "notification": ("[GitHub] New issue opened", "Meeting starting now", "Low disk space warning on laptop",
                   "Your Uber is arriving", "Reminder: water the plants", "Update installed, restart required",
                   "Zoom: recording started", "[Teams] Anna is typing..."),
  "ambiguous": ("ok", "okay", "hm", "right...", "I see.", "Tell me more.", "Why is that?", "Is that normal?",
                "What does that mean?", "How so?", "Really?", "Interesting.", "And?", "Go on.", "Hmm, let me see.",
                "What's the difference?", "How long does it take?", "Can you elaborate?", "Who decides that?"),
 },
},
"de": {-1: {"explicit": ("Das ist Quatsch.", "Völlig falsch.", "Das kann nicht stimmen.", "Die Zahl ist falsch.",
                         "Das gibt es gar nicht.", "Da fehlt ein Schritt."),
            "terse": ("falsch.", "nochmal!", "nee, die andere", "immer noch nicht"),
            "polite_redo": ("Kannst du es bitte kürzer machen?", "Bitte nochmal einfacher.", "Könntest du das umformulieren?")},
       1: {"thanks": ("Danke schön!", "Super, vielen Dank.", "Genau richtig.", "Sehr gut!"),
           "worked": ("Klappt.", "Läuft jetzt.", "Erledigt, danke.", "Alles grün."),
           "builds_on": ("Jetzt das Gleiche für März.", "Als nächstes die Tests.")},
       0: {"ambiguous": ("Warum ist das so?", "Erklär mal genauer.", "Und was heißt das?"),
           "away": ("Bin in einer Besprechung.", "Später mehr.")}},
"es": {-1: {"explicit": ("Eso no tiene sentido.", "Totalmente equivocado.", "No puede ser.", "La cifra está mal.",
                         "Eso no existe.", "Falta un paso."),
            "terse": ("mal.", "¡otra vez!", "no, el otro", "todavía no"),
            "polite_redo": ("¿Puedes hacerlo más corto, por favor?", "Otra vez, más simple por favor.", "¿Lo puedes reformular?")},
       1: {"thanks": ("¡Muchas gracias!", "Genial, gracias.", "Justo lo que necesitaba.", "¡Muy bien!"),
           "worked": ("Funciona.", "Ya va.", "Hecho, gracias.", "Todo en verde."),
           "builds_on": ("Ahora lo mismo para marzo.", "Lo siguiente: los tests.")},
       0: {"ambiguous": ("¿Por qué es así?", "Explícame más.", "¿Y eso qué significa?"),
           "away": ("Estoy en una reunión.", "Luego hablamos.")}},
"fr": {-1: {"explicit": ("Ça n'a aucun sens.", "Complètement faux.", "Impossible.", "Le chiffre est faux.",
                         "Ça n'existe pas.", "Il manque une étape."),
            "terse": ("faux.", "encore !", "non, l'autre", "toujours pas"),
            "polite_redo": ("Tu peux le raccourcir, s'il te plaît ?", "Encore, plus simple s'il te plaît.", "Tu peux reformuler ?")},
       1: {"thanks": ("Merci beaucoup !", "Génial, merci.", "Exactement ce qu'il me fallait.", "Très bien !"),
           "worked": ("Ça fonctionne.", "Ça tourne.", "C'est fait, merci.", "Tout est vert."),
           "builds_on": ("Maintenant pareil pour mars.", "Ensuite, les tests.")},
       0: {"ambiguous": ("Pourquoi ?", "Explique-moi plus.", "Ça veut dire quoi ?"),
           "away": ("Je suis en réunion.", "On en reparle plus tard.")}},
"zh": {-1: {"explicit": ("胡说。", "完全错了。", "这不可能。", "数字不对。", "根本没有这个。", "少了一步。"),
            "terse": ("错。", "再来！", "不是，另一个", "还不行"),
            "polite_redo": ("能再短一点吗？", "请再简单一点。", "能换个说法吗？")},
       1: {"thanks": ("多谢！", "太好了，谢谢。", "正是我需要的。", "很好！"),
           "worked": ("可以了。", "跑起来了。", "搞定了，谢谢。", "全部通过。"),
           "builds_on": ("三月的也这样做。", "下一步：写测试。")},
       0: {"ambiguous": ("为什么会这样？", "详细说说。", "这是什么意思？"),
           "away": ("我在开会。", "回头再说。")}},
}

#: more short, terse, multilingual and no-signal sentences
_MORE_SHORT: dict[str, dict[int, dict[str, tuple[str, ...]]]] = {
"en": {
 -1: {
  "terse": ("wrong year", "older", "bigger", "smaller", "the other tab", "no, Tuesday", "not him", "the red one",
            "it's still there", "nothing happened", "same output", "try the other way", "undo", "revert that",
            "uh, no", "nooo", "wrong person", "different one", "last week's", "the 2nd one", "newest",
            "no, the PDF", "CAPS", "lower", "more", "less", "not again", "hmm no", "that's a no", "nah fam",
            "still not right", "wrong link", "dead link", "404", "typo in it", "missing one", "you skipped one",
            "it's June", "Friday!", "meters!", "EUR not USD", "python 3", "v2 not v1"),
  "sarcasm": ("Oh sure, I'll just rewrite the whole thing myself then.", "Nice, another answer to a question I didn't ask.",
              "Wonderful, now the logo is purple.", "Yeah, that's totally how taxes work.",
              "Great, so now we're emailing the whole company.", "Good to know the moon is made of cheese.",
              "Fantastic suggestion for someone allergic to nuts.", "Thanks, now I have two problems.",
              "Cool, it only took five tries to get it wrong again.", "Oh wow, you broke the one thing that worked.",
              "Sure, let me just fly to Tokyo for lunch.", "Great plan, if I had a time machine."),
  "bare_requirement": ("Past tense.", "Shorter sentences.", "Only 3.", "Weekdays only.", "Use my name.",
                       "In Celsius.", "Add the year.", "Without spaces.", "Bold the headings.", "Active voice.",
                       "Keep it under a page.", "Cite the source.", "One paragraph max.", "Use British English.",
                       "Ascending order.", "With a link.", "No bullet points.", "Make the subject line clearer."),
  "fact": ("The store closes at 6 on Sundays.", "It's spelled Mohammed with two m's.", "Our fiscal year starts in April.",
           "The API is v3 now.", "The meeting was moved to room 4B.", "He retired in 2019.", "Rent is 1,450 now.",
           "The package weighs 3 kilos.", "My username is jdoe2, not jdoe.", "The sign on the door says closed Mondays."),
  "negated_praise": ("Not quite it.", "not really it", "Not convinced that's right.", "Not a fan.", "Nah, not this.",
                     "Not what I'm looking for.", "It's not great, to be honest.", "Not correct, I think.",
                     "That's not helpful.", "Not clear at all.", "Not the vibe I wanted.", "Not even close to right."),
  "polite_redo": ("Could you shorten it a little?", "Maybe a bit more casual?", "Could you try again with simpler words?",
                  "Thanks, but could you drop the jargon?", "Nice, but can we lose the emojis?",
                  "Can you redo it without the intro?", "Would you mind using metric?", "Could you tone it down a bit?",
                  "thx, can you put it in a table instead?", "Appreciated, but a list would be easier to read.",
                  "Good, though could you make it snappier?", "Thanks - just fewer words please.",
                  "Great effort, could you try a version for kids?", "lovely but a bit long, could you trim it?"),
  "mixed": ("The summary is good, the title isn't.", "Code works, but the names are confusing.",
            "Right idea, but it should be in the config, not hardcoded.", "Good, but you forgot the attachment.",
            "Fine for Monday, but Tuesday's wrong.", "Close on the price, wrong on the date."),
 },
 1: {
  "worked": ("did it, all fine", "it's running smoothly now", "he said no problem", "no issues so far",
             "no errors this time", "problem's gone", "the test went from red to green", "compiles and runs",
             "she approved, no changes", "the boss liked it", "customer confirmed it's fixed",
             "my code finally works", "got it working", "back up and running", "went smoothly",
             "the numbers match now", "that matched the bank statement", "printer works again",
             "the email went out", "we shipped it", "the PR got merged", "all 3 checks passed",
             "it connected right away", "done, thanks to you", "the page renders fine now"),
  "builds_on": ("and the next one?", "what's step 3?", "how about for Linux?", "then what?", "ok, what next?",
                "can you do the same with the other list?", "let's add a chart too", "and in Spanish?",
                "now for the weekend version", "ok, the second question:", "next up: the budget",
                "cool, how do I test it?", "awesome, how do I deploy this?", "now the footer please",
                "good - now the error handling", "and can you make a version for mobile?",
                "can we also send a reminder?", "add the totals row too", "do the same for Q3"),
  "thanks": ("thanks mate", "cheers!", "ta", "thank u", "thanks heaps", "great, ty", "much obliged",
             "you're the best", "big help, thanks", "owe you one", "perfect thx", "that's grand, thanks"),
  "agree": ("yep, exactly that", "yes that's correct", "indeed it is", "true", "yeah good idea", "ok let's do that",
            "sure, sounds good", "agreed 100%", "that's right", "correct answer"),
  "emoji": ("👍🏻", "🙏🏼 thanks", "😄", "🎯", "💪 works", "😍", "🤩", "yay 🎉"),
 },
 0: {
  "away": ("gotta go pick up the kids", "in a meeting, will read later", "afk for a bit", "talk tomorrow",
           "brb coffee", "one moment please", "let me check and come back", "need to take this call",
           "out for lunch", "back soon", "I'll try it tonight", "will test on Monday", "logging off now"),
  "notification": ("[Slack] @channel standup moved", "New follower on your account", "Reminder: submit timesheet",
                   "Your meeting with Sam starts in 5 minutes", "[CI] nightly build #{n} started",
                   "Flight LH{n} is now boarding", "Package out for delivery", "Weather alert: heavy rain",
                   "[Calendar] Lunch with {person}", "Storage almost full"),
  "new_topic": ("totally unrelated, how do I descale a kettle?", "quick q: best time to visit Japan?",
                "other thing - what's the VAT in Germany?", "how many calories in an apple?",
                "also, who was the first person on the moon?", "new question: how do mortgages work?",
                "btw what's the keyboard shortcut for screenshots on mac?"),
  "ambiguous": ("where did you read that?", "is that still true in 2024?", "how sure are you?", "what's the source?",
                "so what would you do?", "which is faster?", "what does 'idempotent' mean here?", "ok, noted",
                "hmm, maybe", "I'll think about it", "interesting take", "good question actually"),
 },
},
"de": {
 -1: {"terse": ("falsches Jahr", "die neuere", "nee, Dienstag", "immer noch da", "nichts passiert", "anders herum",
                "zu lang", "Euro!", "mehr", "weniger"),
      "sarcasm": ("Na toll, jetzt ist alles lila.", "Super, jetzt habe ich zwei Probleme."),
      "negated_praise": ("Nicht so ganz.", "Nicht das Wahre.", "Nicht überzeugend."),
      "polite_redo": ("Könntest du es etwas kürzen?", "Vielleicht etwas lockerer?", "Danke, aber als Tabelle bitte.",
                      "Schön, aber ohne Fachbegriffe bitte.")},
 1: {"worked": ("läuft jetzt", "keine Fehler mehr", "er meinte kein Problem", "alles gut gegangen",
                "der Test ist grün", "hat sofort funktioniert", "Kunde sagt, es geht"),
     "builds_on": ("und der nächste Schritt?", "jetzt noch für Linux", "und auf Spanisch?", "mach das auch für Q3",
                   "wie teste ich das?"),
     "thanks": ("danke schön", "merci", "vielen lieben Dank", "super, danke dir")},
 0: {"away": ("bin in einem Meeting", "gleich wieder da", "muss die Kinder abholen", "melde mich morgen"),
     "notification": ("Neue E-Mail von {person}", "Erinnerung: Zahnarzt um 15 Uhr"),
     "new_topic": ("ganz andere Frage: wie entkalke ich den Wasserkocher?", "kurze Frage: beste Reisezeit für Japan?")}},
"es": {
 -1: {"terse": ("año equivocado", "el más nuevo", "no, el martes", "sigue ahí", "no pasó nada", "al revés",
                "muy largo", "¡en euros!", "más", "menos"),
      "sarcasm": ("Genial, ahora todo es morado.", "Estupendo, ahora tengo dos problemas."),
      "negated_praise": ("No del todo.", "No me acaba de convencer.", "No es eso."),
      "polite_redo": ("¿Podrías acortarlo un poco?", "¿Quizá algo más informal?", "Gracias, pero en una tabla, porfa.",
                      "Bien, pero sin tecnicismos.")},
 1: {"worked": ("ya funciona", "sin errores", "dijo que no hay problema", "todo salió bien", "el test está en verde",
                "funcionó a la primera", "el cliente dice que ya va"),
     "builds_on": ("¿y el siguiente paso?", "ahora para Linux", "¿y en inglés?", "haz lo mismo con el Q3", "¿cómo lo pruebo?"),
     "thanks": ("muchas gracias", "gracias, crack", "te lo agradezco", "genial, gracias")},
 0: {"away": ("estoy en una reunión", "ahora vuelvo", "tengo que recoger a los niños", "hablamos mañana"),
     "notification": ("Nuevo correo de {person}", "Recordatorio: dentista a las 15h"),
     "new_topic": ("otra pregunta: ¿cómo descalcifico la tetera?", "pregunta rápida: ¿mejor época para ir a Japón?")}},
"fr": {
 -1: {"terse": ("mauvaise année", "la plus récente", "non, mardi", "toujours là", "rien ne s'est passé", "à l'envers",
                "trop long", "en euros !", "plus", "moins"),
      "sarcasm": ("Génial, maintenant tout est violet.", "Super, maintenant j'ai deux problèmes."),
      "negated_praise": ("Pas tout à fait.", "Pas convaincant.", "Ce n'est pas ça."),
      "polite_redo": ("Tu pourrais le raccourcir un peu ?", "Peut-être un ton plus détendu ?", "Merci, mais en tableau stp.",
                      "Bien, mais sans jargon.")},
 1: {"worked": ("ça marche maintenant", "plus d'erreur", "il a dit pas de souci", "tout s'est bien passé",
                "le test est au vert", "ça a marché du premier coup", "le client dit que c'est réglé"),
     "builds_on": ("et l'étape suivante ?", "maintenant pour Linux", "et en espagnol ?", "fais pareil pour le T3",
                   "comment je le teste ?"),
     "thanks": ("merci beaucoup", "merci, t'es au top", "je te remercie", "génial, merci")},
 0: {"away": ("je suis en réunion", "je reviens tout de suite", "je dois aller chercher les enfants", "on se parle demain"),
     "notification": ("Nouveau mail de {person}", "Rappel : dentiste à 15h"),
     "new_topic": ("autre question : comment détartrer la bouilloire ?", "question rapide : meilleure période pour le Japon ?")}},
"zh": {
 -1: {"terse": ("年份不对", "要新的", "不，是周二", "还在", "没反应", "反了", "太长了", "用欧元！", "多一点", "少一点"),
      "sarcasm": ("太好了，现在全是紫色的。", "真棒，现在我有两个问题了。"),
      "negated_praise": ("不太行。", "不太靠谱。", "不是这个意思。"),
      "polite_redo": ("能稍微短一点吗？", "可以随意一点吗？", "谢谢，不过做成表格吧。", "不错，但别用术语。")},
 1: {"worked": ("现在好了", "不报错了", "他说没问题", "一切顺利", "测试通过了", "一次就成功了", "客户说已经好了"),
     "builds_on": ("下一步呢？", "现在换成Linux的", "英文版呢？", "第三季度也这样做", "怎么测试？"),
     "thanks": ("非常感谢", "谢啦", "感谢感谢", "太好了，谢谢你")},
 0: {"away": ("在开会", "马上回来", "我去接孩子", "明天聊"),
     "notification": ("来自{person}的新邮件", "提醒：下午3点看牙医"),
     "new_topic": ("另外一个问题：水壶怎么除垢？", "问一下：什么时候去日本最好？")}},
}

#: past-tense reports, sarcasm about what broke, short multilingual requirements
_MORE_REPORTS: dict[str, dict[int, dict[str, tuple[str, ...]]]] = {
"en": {
 1: {"worked": ("works again", "it's online again", "we can log in again", "running again", "the build passes again",
                "all good again", "back to normal", "the alarm went off on time", "the job ran at midnight",
                "the server came up", "the email arrived", "ordered it", "booked it", "bought the cheaper one"),
     "agree": ("went with option 2", "picked the blue one", "using that one", "took your suggestion",
               "going with the second one", "I'll take the first", "the second one it is", "using it"),
 },
 -1: {"sarcasm": ("Great, now {bad}. Thanks a lot.", "Perfect, now {bad}.", "Awesome, {bad}. Just what I needed.",
                  "Wonderful, so now {bad}.", "Good job, {bad}.", "Sure, {person} will love that.",
                  "Oh great, and now {bad}."),
      "explicit": ("Now {bad}.", "After your change {bad}.", "Since the update {bad}.")},
},
"fr": {-1: {"bare_requirement": ("En deux phrases.", "En français.", "Sous forme de tableau.", "Sans emojis.",
                                 "Au passé.", "En euros.", "Trois points maximum.", "En une ligne."),
            "terse": ("celle de 2024 !", "le bon fichier !", "pas lui")},
       0: {"new_topic": ("Autre chose : {topic} ?", "Rien à voir : {topic} ?", "Sinon, {topic} ?"),
           "away": ("je file, à demain", "je finis ma journée, on voit demain", "pause déjeuner")}},
"de": {-1: {"bare_requirement": ("In zwei Sätzen.", "Auf Deutsch.", "Als Tabelle.", "Ohne Emojis.", "In einer Zeile."),
            "terse": ("die von 2024!", "die richtige Datei!", "nicht er")},
       0: {"new_topic": ("Andere Sache: {topic}?", "Sonst noch: {topic}?"),
           "away": ("Feierabend, morgen weiter", "Mittagspause")}},
"es": {-1: {"bare_requirement": ("En dos frases.", "En español.", "En una tabla.", "Sin emojis.", "En una línea."),
            "terse": ("¡el de 2024!", "¡el archivo correcto!", "él no")},
       0: {"new_topic": ("Otra cosa: ¿{topic}?", "Nada que ver: ¿{topic}?"),
           "away": ("me voy, mañana seguimos", "pausa para comer")}},
"zh": {-1: {"bare_requirement": ("两句话就够了。", "一句话就行。", "用中文。", "做成表格。", "不要表情符号。", "三点就够了。",
                                 "五十字以内就好。"),
            "terse": ("今年的！", "是新的那个！", "不是他", "要最新的！", "是上个月的！"),
            "explicit": ("差远了。", "差得多，是{n}。", "远不止，是{n}。")},
       0: {"new_topic": ("另一个问题：{topic}？", "说点别的：{topic}？"),
           "away": ("我下班了，明天再聊", "先吃饭，回头说", "我去开会了")}},
}

#: everyday outcomes, choices and short corrections outside software
_MORE_EVERYDAY: dict[str, dict[int, dict[str, tuple[str, ...]]]] = {
"en": {
 1: {"worked": ("connected", "it synced", "it printed", "the upload finished", "download done", "it booted",
                "installed and running", "logged in fine", "the alarm is set", "payment went through",
                "the refund came in", "the invite went out", "calendar updated", "the bug is gone",
                "the graph looks right now", "numbers tie out", "it's fixed on my end", "all set",
                "done and dusted", "sorted", "good to go", "mission accomplished", "nailed it, it runs",
                "cake turned out great", "the plant is thriving", "the meeting went well", "he loved the gift",
                "she said yes", "we got the apartment", "they accepted the quote", "passed the exam"),
     "agree": ("that one it is", "I'll go with that", "decided: the first option", "taking the blue one",
               "let's do it your way", "fine by me", "works for me", "deal", "settled then", "ok, that's the plan",
               "yep, ordering now", "booking that", "sending it as is", "using your version", "keeping it"),
     "builds_on": ("cool, now the dessert", "next the guest list", "and for the kids' room?", "now the cover letter",
                   "same for my sister's birthday", "next stop: Lisbon", "how about the return flight?",
                   "now translate it for my grandma", "can you turn that into a checklist?", "let's schedule it",
                   "now add it to my calendar", "ok, and the budget for it?"),
     "emoji": ("🙂👍", "🤝", "👏👏", "🥰", "🙏 perfect", "✨"),
     "thanks": ("legend, thanks", "thanks, that helps a lot", "appreciate the help", "thank you kindly",
                "many thanks", "thanks, very useful", "cheers for that", "brilliant, ta")},
 -1: {"terse": ("other way", "wrong sheet", "wrong tab", "wrong date", "for 4 people", "in blue", "by Friday",
                "the 2023 one", "the PDF one", "Monday, not Tuesday", "nope, Q3", "the big one", "not that one",
                "the previous version", "the new one please", "20, not 12", "you missed one", "one more", "too many",
                "too few", "too much", "still too long", "still slow"),
      "explicit": ("That's not true.", "That's a myth.", "You're thinking of a different city.", "That was last year.",
                   "It doesn't exist anymore.", "That's closed now.", "The price is wrong.", "That's way too expensive.",
                   "That's in the wrong currency.", "Those aren't my dates.", "You booked the wrong day.",
                   "You sent it to the wrong person.", "You deleted the wrong one.", "That's not my address."),
      "negated_praise": ("Not great.", "Not the best.", "Not really helpful.", "not impressed", "meh, not it",
                         "Hardly an improvement."),
      "polite_redo": ("Could you try a different approach?", "Could you do it for 4 people instead?",
                      "Please make it more specific.", "Can you be more precise?", "Could you simplify the steps?",
                      "Mind doing it again with the right dates?")},
 0: {"away": ("dinner time, bbl", "gotta feed the dog", "hold that thought", "driving, later", "at the gym, later",
              "my train is here", "I'll decide later", "let me ask my wife"),
     "ambiguous": ("what would you pick?", "is that expensive?", "how big is it?", "is it safe?", "does it matter?",
                   "what's the catch?", "how do you know?", "hmm, not sure yet"),
     "new_topic": ("what should I cook tonight?", "any tips for sleeping better?", "how do I fix a squeaky door?",
                   "what's trending on the news?", "recommend a podcast?")},
},
"de": {1: {"worked": ("verbunden", "synchronisiert", "gedruckt", "Upload fertig", "Zahlung ging durch", "passt, erledigt"),
           "agree": ("nehme ich", "machen wir so", "klingt gut", "einverstanden, buche ich")},
       -1: {"terse": ("falsches Blatt", "falscher Tag", "für 4 Personen", "bis Freitag", "zu viele", "zu teuer")}},
"es": {1: {"worked": ("conectado", "sincronizado", "impreso", "subida terminada", "el pago se hizo", "hecho, listo"),
           "agree": ("me quedo con esa", "lo hacemos así", "suena bien", "de acuerdo, lo reservo")},
       -1: {"terse": ("hoja equivocada", "día equivocado", "para 4 personas", "para el viernes", "demasiados", "muy caro")}},
"fr": {1: {"worked": ("connecté", "synchronisé", "imprimé", "envoi terminé", "le paiement est passé", "c'est fait"),
           "agree": ("je prends celle-là", "on fait comme ça", "ça me va", "d'accord, je réserve")},
       -1: {"terse": ("mauvaise feuille", "mauvais jour", "pour 4 personnes", "pour vendredi", "trop", "trop cher")}},
"zh": {1: {"worked": ("连上了", "同步好了", "打印好了", "上传完成", "付款成功", "搞定"),
           "agree": ("就要这个", "就这么办", "听起来不错", "好的，我订了")},
       -1: {"terse": ("表格不对", "日期不对", "四个人的", "周五之前", "太多了", "太贵了")}},
}

for _lang, _labels in [*_MORE_SLOTS.items(), *_MORE_TURNS.items(), *_MORE.items(), *_MORE_SHORT.items(), *_MORE_REPORTS.items(),
                       *_MORE_EVERYDAY.items()]:
    for _label, _styles in _labels.items():
        for _style, _extra in _styles.items():
            _T[_lang][_label][_style] = _T[_lang][_label].get(_style, ()) + _extra

# The turns a next state follows: (request, response) per language; {paste} uses the response.
_TURNS: dict[str, tuple[tuple[str, str], ...]] = {
    "en": (("When is my flight?", "Your flight leaves on March 12 at 9:40."),
           ("Summarise this article.", "The article argues that remote work raises productivity in several ways..."),
           ("Write a function that reverses a list.", "def reverse(xs):\n    return xs[::-1]"),
           ("Fix the failing import in app.py.", "I changed `from util import load` to `from utils import load`."),
           ("Draft an email to the landlord about the heater.", "Dear Mr. Brown, I am writing about the heater..."),
           ("What's 15% of 240?", "15% of 240 is 36."),
           ("Give me three name ideas for a bakery.", "1. Crumb & Co\n2. Rise Up\n3. The Daily Loaf")),
    "de": (("Wann geht mein Flug?", "Dein Flug geht am 12. März um 9:40."),
           ("Fasse den Artikel zusammen.", "Der Artikel argumentiert, dass Homeoffice produktiver macht..."),
           ("Schreib eine Funktion, die eine Liste umdreht.", "def umdrehen(xs):\n    return xs[::-1]")),
    "es": (("¿Cuándo sale mi vuelo?", "Tu vuelo sale el 12 de marzo a las 9:40."),
           ("Resume este artículo.", "El artículo sostiene que el teletrabajo aumenta la productividad..."),
           ("Escribe una función que invierta una lista.", "def invertir(xs):\n    return xs[::-1]")),
    "fr": (("Quand part mon vol ?", "Ton vol part le 12 mars à 9h40."),
           ("Résume cet article.", "L'article soutient que le télétravail augmente la productivité..."),
           ("Écris une fonction qui inverse une liste.", "def inverser(xs):\n    return xs[::-1]")),
    "zh": (("我的航班是什么时候？", "你的航班是3月12日9:40起飞。"),
           ("总结一下这篇文章。", "这篇文章认为远程办公能提高效率……"),
           ("写一个反转列表的函数。", "def reverse(xs):\n    return xs[::-1]")),
}

_EMOJI = ("🙂", "😅", "👍", "🙏", "😕", "🤔")
_FILLER = {"en": ("ok ", "hey ", "so ", "um "), "de": ("also ", "ok "), "es": ("bueno ", "vale "),
           "fr": ("bon ", "ok "), "zh": ("嗯，", "那个，")}


def _fill(template: str, lang: str, rng: random.Random, request: str, response: str) -> str:
    out = template
    for slot, values in _SLOTS.items():
        token = "{" + slot + "}"
        while token in out:
            out = out.replace(token, rng.choice(values.get(lang) or values["en"]), 1)
    if "{paste}" in out:  # the user's own fixed version: the reply with one line edited
        lines = response.splitlines() or [response]
        i = rng.randrange(len(lines))
        lines[i] = lines[i].replace("xs[::-1]", "list(reversed(xs))").replace("9:40", "10:40") + " # fixed"
        out = out.replace("{paste}", "\n".join(lines))
    return out.replace("{repeat}", request.rstrip("?？"))


def _typo(text: str, rng: random.Random) -> str:
    idx = [i for i, c in enumerate(text) if c.isalpha()]
    if len(idx) < 4:
        return text
    i = rng.choice(idx[1:-1])
    return text[:i] + text[i + 1] + text[i] + text[i + 2:] if rng.random() < 0.5 else text[:i] + text[i + 1:]


def _noise(text: str, lang: str, rng: random.Random) -> str:
    """One deterministic surface variant: lower case, no final punctuation, a typo, emoji, filler."""
    if "\n" in text:  # pasted code stays as written
        return text
    r = rng.random()
    if r < 0.2:
        text = text.lower()
    elif r < 0.35:
        text = text.rstrip(".!。！")
    elif r < 0.5:
        text = _typo(text, rng)
    elif r < 0.6:
        text = f"{text} {rng.choice(_EMOJI)}"
    elif r < 0.7 and len(text) > 6:
        text = rng.choice(_FILLER[lang]) + text[0].lower() + text[1:]
    return text


def generate(seed: int = 0, per_template: int = 4) -> list[CorpusExample]:
    """The whole corpus, deterministic for a given ``seed``.

    Args:
        seed: seeds slot choice and surface noise. per_template: variants made from each template
            (slot values and noise differ; exact duplicates are dropped).

    Returns:
        Examples in a fixed order (language, verdict, style, template, variant).
    """
    out, seen = [], set()
    for lang in LANGUAGES:
        for label, styles in _T[lang].items():
            for style, templates in styles.items():
                for k, template in enumerate(templates):
                    family = f"{lang}:{label}:{style}:{k}"
                    rng = random.Random(f"{seed}:{family}")
                    for _ in range(per_template):
                        request, response = rng.choice(_TURNS[lang])
                        text = _noise(_fill(template, lang, rng, request, response), lang, rng)
                        if (text, request) in seen:
                            continue
                        seen.add((text, request))
                        out.append(CorpusExample(request, response, text, label, lang, style, family))
    return out


def _held_back(family: str, seed: int, fraction: float) -> bool:
    digest = hashlib.sha256(f"heldback:{seed}:{family}".encode()).digest()
    return digest[0] / 256.0 < fraction


def split(examples: list[CorpusExample], fraction: float = 0.2, seed: int = 0
          ) -> tuple[list[CorpusExample], list[CorpusExample]]:
    """``(train, held_back)``: whole template families go to the held-back slice with probability
    ``fraction`` (a hash of the family name, so the split does not depend on the order or the
    other families). The held-back slice is for measuring only, never for tuning."""
    train, held = [], []
    for ex in examples:
        (held if _held_back(ex.family, seed, fraction) else train).append(ex)
    return train, held


def corpus_fingerprint(seed: int = 0, per_template: int = 4) -> str:
    """A short hash of the generated corpus (the classifier's cache key changes with it)."""
    h = hashlib.sha256()
    for ex in generate(seed, per_template):
        h.update(f"{ex.label}\x00{ex.request}\x00{ex.next_state}\x00{ex.family}\n".encode())
    return h.hexdigest()[:16]


def main(argv: list[str] | None = None) -> int:
    """Write the corpus (or its held-back slice) as a judge case file (``openclaw-rl judge-eval --cases``)."""
    p = argparse.ArgumentParser(prog="python -m openclaw_rl.judges.feedback_corpus", description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="JSONL file to write")
    p.add_argument("--part", choices=("all", "train", "heldback"), default="all")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    examples = generate(a.seed)
    if a.part != "all":
        train, held = split(examples, seed=a.seed)
        examples = train if a.part == "train" else held
    with open(a.out, "w", encoding="utf-8") as fh:
        for i, ex in enumerate(examples):
            fh.write(json.dumps({"name": f"gen{i}:{ex.family}", "request": ex.request, "response": ex.response,
                                 "next_state": ex.next_state, "role": "user", "expected": ex.label,
                                 "tags": ["generated", f"lang:{ex.lang}", ex.style]}, ensure_ascii=False) + "\n")
    print(f"wrote {len(examples)} examples to {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
